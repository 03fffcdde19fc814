//! The seccomp filter of a confined child: what Landlock does not cover. It is an
//! allow-list: a call it does not list is refused, and every refusal is named.
//!
//! Allowed (`allowed`): the calls programs ordinarily make, in the kernel's own
//! categories: files through a descriptor or a path (Landlock judges the paths), memory
//! (`mmap`, `mremap`, `brk`, `madvise`, `mlock`, ...), threads and futexes, signals to itself
//! and its own processes, time, polling and events (`epoll`, `eventfd`, `timerfd`,
//! `signalfd`, `inotify`), sockets (the kinds the grant's `network` allows), and what the
//! Rust runtime, tokio, glibc's `ld.so`, `malloc` and `pthread_create`, and the host's own
//! threads in the child (the supervisor's `ioctl`s on the seccomp listener, the reporting
//! thread's `poll`) need: `rseq`, `set_robust_list`, `sigaltstack`, `prctl`, `getrandom`,
//! `statx`, `close_range`, `pidfd_open`, `membarrier`, `sched_getaffinity`,
//! `prlimit64` reading a limit, and on x86-64 the older forms (`open`, `stat`, `poll`,
//! `arch_prctl`, ...). The list is built from what those use (every sandbox test of
//! `tests/tests/sandbox*.rs` runs through it) and from the calls the common container
//! runtimes' default profiles let through.
//!
//! Allowed only in their harmless forms (their arguments are checked):
//! - for oneself only (pid 0 or the child's own pid): `prlimit64`, and only to read a limit
//!   (a new limit is refused: the limits bound the plugin; `setrlimit` likewise), `setpriority`
//!   (of its own process only, not a process group or a user), `sched_setscheduler`,
//!   `sched_setparam`, `sched_setattr`, `sched_setaffinity`, `ioprio_set`,
//!   `process_vm_readv`/`writev` (the host reads its own memory, `crate::library::memory`),
//!   `fcntl(F_SETOWN)` (`F_SETOWN_EX` is refused, and so is `F_SETLEASE`: the host's own
//!   open of a file the plugin holds a lease on would wait for it);
//! - signals (`kill`, `tkill`, `tgkill`, `rt_sigqueueinfo`, `rt_tgsigqueueinfo`): not to the
//!   host, not to the host's process group, not to every process (`kill(-1)`), and
//!   `kill(0)` only when the child has a process group of its own (the host starts it in
//!   one); the other processes outside the sandbox are Landlock's signal scoping's (refused,
//!   not named). `pidfd_send_signal` is refused (its target is a descriptor the filter cannot
//!   read);
//! - `ioctl`, except `TIOCSTI` and `TIOCLINUX` (typing into a terminal), `TIOCSPGRP`,
//!   `TIOCSCTTY`, `TIOCCONS` and `TIOCSETD` (taking a terminal from the host), `FIOSETOWN`
//!   and `SIOCSPGRP` (signals to another process);
//! - `mknod` / `mknodat` of FIFOs, sockets and regular files, not of character or block
//!   devices;
//! - `setpgid`, not into the host's process group;
//! - `clone` of a thread (with `exec`, of a process too), never with a new namespace or
//!   `CLONE_PARENT`;
//!   `clone3` answers `ENOSYS` (its flags are in memory, where the filter cannot read them),
//!   so the C library falls back to `clone`;
//! - `socket`: any family with `network: true`; with a list of hosts, Unix, IPv4, IPv6 and
//!   the routing netlink socket the C library's name lookup reads addresses from (the
//!   supervisor checks every address the plugin reaches, `super::network`); only Unix
//!   sockets without;
//! - `execve`, `execveat`, `fork`, `vfork`: only when the grant runs programs.
//!
//! Refused and named with a reason of their own (`REFUSED`): `ptrace`, other processes'
//! memory, mounts, keyrings, namespaces, `bpf`, `perf_event_open`, `userfaultfd`, kernel
//! modules, `kexec`, io_uring (`io_uring_setup`/`enter`/`register`: its operations would go
//! around this filter and the supervisor), `open_by_handle_at` and `name_to_handle_at`,
//! `kcmp`, `pidfd_getfd`, `pidfd_send_signal`, `chroot`, `setrlimit`, System V IPC and
//! POSIX message queues (shared with every process of the machine), `sethostname`,
//! `setdomainname`, `syslog`, `fanotify_init`, `reboot`, swap, `acct`, the clocks' setters,
//! `quotactl`, `iopl`, `ioperm`, `modify_ldt`, `personality`, NUMA page moves,
//! `process_madvise`, `memfd_secret`. Any other call is refused as not listed, named by its
//! name ([`super::syscall_names`]).
//!
//! A refused call does not run. It returns `EPERM` (`EACCES` for a socket, as Landlock's
//! refusals do), and `ENOSYS` for a call the filter does not know at all, as a kernel
//! without it would (a program that probes a new call falls back): the filter raises
//! `SIGSYS`, whose handler (installed here, before the plugin's code) sets the return
//! value and passes the call's number and first arguments to a reporting thread through a
//! pipe; that thread sends the host a `denied` notification naming the call and the rule.
//! A plugin that takes `SIGSYS` away from the handler is killed by it: the host reports a
//! crash by `SIGSYS`. A program the plugin runs (with `exec`) starts with `SIGSYS` at its
//! default: a call outside the list ends it.
//!
//! The same reporting thread watches the host (a pidfd opened before the filter): when the
//! host has ended, it ends every process in the child's cgroup ([`super::cgroup::end_all`]:
//! what the plugin started, even a program that left for a session of its own), its process
//! group and itself, so a confined child never outlives its host (`PR_SET_PDEATHSIG` would follow the host's thread that started the
//! child, not the host, and the host starts children from threads that end before it).
//!
//! On x86-64, every call of the x32 ABI answers `ENOSYS` (a filter of its own, `no_x32`), as
//! on a kernel without x32: the rules above list native numbers only.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::Read;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::Grant;

/// The write end of the pipe from the handler to the reporting thread (-1: none).
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// The read end (non-blocking) of the pipe on which the reporting thread wakes the handlers
/// waiting for their report to go out (-1: none).
static ACK_FD: AtomicI32 = AtomicI32::new(-1);

/// How long the handler waits for its report to go out before the refused call returns.
const ACK_WAIT_MS: i64 = 1000;

/// One refused call as the handler writes it: the call's number, its sequence number and
/// its first four arguments, each 8 bytes (a pipe write of it is atomic).
const RECORD_BYTES: usize = 48;

/// The last sequence number handed to a refused call.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// How many refusals may wait for their report at once and still be told apart.
const WAITING: usize = 64;

/// The sequence number of the last report sent, by sequence number modulo [`WAITING`]: a
/// handler waits until its own appears (a stale wake-up, or one meant for another thread,
/// is not taken for its own).
static SENT: [AtomicU64; WAITING] = [const { AtomicU64::new(0) }; WAITING];

/// Newer calls the libc crate does not name on every machine (the numbers every
/// architecture shares since Linux 5.1): `cachestat` (6.5), `fchmodat2` (6.6), the futex2
/// calls (6.7).
const SYS_CACHESTAT: i64 = 451;
const SYS_FCHMODAT2: i64 = 452;
const SYS_FUTEX_WAKE: i64 = 454;
const SYS_FUTEX_WAIT: i64 = 455;
const SYS_FUTEX_REQUEUE: i64 = 456;

/// `map_shadow_stack` (x86-64, Linux 6.6: glibc's shadow stacks).
#[cfg(target_arch = "x86_64")]
const SYS_MAP_SHADOW_STACK: i64 = 453;

/// Calls allowed whatever their arguments, on every machine.
const ALLOWED: &[i64] = &[
    // Files through a descriptor or a path (Landlock judges paths; the supervisor names
    // its refusals).
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_preadv,
    libc::SYS_pwritev,
    libc::SYS_preadv2,
    libc::SYS_pwritev2,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_lseek,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_statfs,
    libc::SYS_fstatfs,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_readlinkat,
    libc::SYS_getdents64,
    libc::SYS_getcwd,
    libc::SYS_chdir,
    libc::SYS_fchdir,
    libc::SYS_mkdirat,
    libc::SYS_unlinkat,
    libc::SYS_renameat2,
    libc::SYS_linkat,
    libc::SYS_symlinkat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_truncate,
    libc::SYS_ftruncate,
    libc::SYS_fallocate,
    libc::SYS_fsync,
    libc::SYS_fdatasync,
    libc::SYS_sync,
    libc::SYS_syncfs,
    libc::SYS_flock,
    libc::SYS_dup,
    libc::SYS_dup3,
    libc::SYS_pipe2,
    libc::SYS_memfd_create,
    libc::SYS_sendfile,
    libc::SYS_copy_file_range,
    libc::SYS_splice,
    libc::SYS_tee,
    libc::SYS_vmsplice,
    libc::SYS_readahead,
    libc::SYS_fadvise64,
    libc::SYS_umask,
    libc::SYS_inotify_init1,
    libc::SYS_inotify_add_watch,
    libc::SYS_inotify_rm_watch,
    libc::SYS_getxattr,
    libc::SYS_lgetxattr,
    libc::SYS_fgetxattr,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_flistxattr,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    // Memory.
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_mremap,
    libc::SYS_brk,
    libc::SYS_madvise,
    libc::SYS_msync,
    libc::SYS_mincore,
    libc::SYS_mlock,
    libc::SYS_mlock2,
    libc::SYS_munlock,
    libc::SYS_mlockall,
    libc::SYS_munlockall,
    libc::SYS_membarrier,
    libc::SYS_get_mempolicy,
    libc::SYS_set_mempolicy,
    libc::SYS_pkey_alloc,
    libc::SYS_pkey_free,
    libc::SYS_pkey_mprotect,
    libc::SYS_mseal,
    SYS_CACHESTAT,
    // Linux AIO: reads and writes on descriptors already open.
    libc::SYS_io_setup,
    libc::SYS_io_destroy,
    libc::SYS_io_submit,
    libc::SYS_io_cancel,
    libc::SYS_io_getevents,
    // Threads, futexes, the C library's and the runtime's bookkeeping.
    libc::SYS_rseq,
    libc::SYS_set_robust_list,
    libc::SYS_get_robust_list,
    libc::SYS_set_tid_address,
    libc::SYS_futex,
    libc::SYS_futex_waitv,
    SYS_FUTEX_WAKE,
    SYS_FUTEX_WAIT,
    SYS_FUTEX_REQUEUE,
    libc::SYS_restart_syscall,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_wait4,
    libc::SYS_waitid,
    libc::SYS_prctl,
    libc::SYS_seccomp,
    libc::SYS_landlock_create_ruleset,
    libc::SYS_landlock_add_rule,
    libc::SYS_landlock_restrict_self,
    // Who it is (the setters only lower what it has: no capability is left).
    libc::SYS_getpid,
    libc::SYS_getppid,
    libc::SYS_gettid,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    libc::SYS_getresuid,
    libc::SYS_getresgid,
    libc::SYS_getgroups,
    libc::SYS_getpgid,
    libc::SYS_getsid,
    libc::SYS_setsid,
    libc::SYS_setuid,
    libc::SYS_setgid,
    libc::SYS_setreuid,
    libc::SYS_setregid,
    libc::SYS_setresuid,
    libc::SYS_setresgid,
    libc::SYS_setfsuid,
    libc::SYS_setfsgid,
    libc::SYS_setgroups,
    libc::SYS_capget,
    libc::SYS_capset,
    libc::SYS_uname,
    libc::SYS_sysinfo,
    libc::SYS_getrandom,
    libc::SYS_getrusage,
    libc::SYS_getcpu,
    libc::SYS_getpriority,
    libc::SYS_ioprio_get,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_getparam,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_getattr,
    libc::SYS_sched_get_priority_max,
    libc::SYS_sched_get_priority_min,
    libc::SYS_sched_rr_get_interval,
    // Time.
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_gettimeofday,
    libc::SYS_times,
    libc::SYS_getitimer,
    libc::SYS_setitimer,
    libc::SYS_timer_create,
    libc::SYS_timer_settime,
    libc::SYS_timer_gettime,
    libc::SYS_timer_getoverrun,
    libc::SYS_timer_delete,
    // Signals to itself (other processes: see `signal_rules`).
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigpending,
    libc::SYS_rt_sigsuspend,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_sigaltstack,
    libc::SYS_pidfd_open,
    // Polling and events.
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_eventfd2,
    libc::SYS_signalfd4,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_settime,
    libc::SYS_timerfd_gettime,
    libc::SYS_ppoll,
    libc::SYS_pselect6,
    // Sockets once made (`socket` itself: see `apply`).
    libc::SYS_socketpair,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_connect,
    libc::SYS_getsockname,
    libc::SYS_getpeername,
    libc::SYS_sendto,
    libc::SYS_recvfrom,
    libc::SYS_sendmsg,
    libc::SYS_recvmsg,
    libc::SYS_sendmmsg,
    libc::SYS_recvmmsg,
    libc::SYS_setsockopt,
    libc::SYS_getsockopt,
    libc::SYS_shutdown,
];

/// The older forms x86-64 still has, allowed whatever their arguments.
#[cfg(target_arch = "x86_64")]
const ALLOWED_X86_64: &[i64] = &[
    libc::SYS_open,
    libc::SYS_creat,
    libc::SYS_stat,
    libc::SYS_lstat,
    libc::SYS_access,
    libc::SYS_pipe,
    libc::SYS_dup2,
    libc::SYS_poll,
    libc::SYS_select,
    libc::SYS_epoll_create,
    libc::SYS_epoll_wait,
    libc::SYS_eventfd,
    libc::SYS_signalfd,
    libc::SYS_inotify_init,
    libc::SYS_mkdir,
    libc::SYS_rmdir,
    libc::SYS_rename,
    libc::SYS_unlink,
    libc::SYS_link,
    libc::SYS_symlink,
    libc::SYS_readlink,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_lchown,
    libc::SYS_getdents,
    libc::SYS_getpgrp,
    libc::SYS_time,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_alarm,
    libc::SYS_pause,
    libc::SYS_getrlimit,
    libc::SYS_arch_prctl,
    SYS_MAP_SHADOW_STACK,
    libc::SYS_renameat,
    libc::SYS_sync_file_range,
];

#[cfg(not(target_arch = "x86_64"))]
const ALLOWED_X86_64: &[i64] = &[];

/// Calls refused whatever their arguments and the grant, with the rule each breaks.
const REFUSED: &[(i64, &str)] = &[
    (
        libc::SYS_ptrace,
        "a confined plugin may not trace other processes",
    ),
    (
        libc::SYS_process_vm_readv,
        "a confined plugin may not read other processes' memory",
    ),
    (
        libc::SYS_process_vm_writev,
        "a confined plugin may not write other processes' memory",
    ),
    (
        libc::SYS_mount,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_umount2,
        "a confined plugin may not unmount file systems",
    ),
    (
        libc::SYS_pivot_root,
        "a confined plugin may not change the root",
    ),
    (
        libc::SYS_chroot,
        "a confined plugin may not change the root",
    ),
    (
        libc::SYS_fsopen,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_fsconfig,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_fsmount,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_fspick,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_move_mount,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_open_tree,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_mount_setattr,
        "a confined plugin may not mount file systems",
    ),
    (
        libc::SYS_keyctl,
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_add_key,
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_request_key,
        "a confined plugin may not use the kernel's keyrings",
    ),
    (
        libc::SYS_unshare,
        "a confined plugin may not make namespaces",
    ),
    (
        libc::SYS_setns,
        "a confined plugin may not enter namespaces",
    ),
    (libc::SYS_bpf, "a confined plugin may not load BPF programs"),
    (
        libc::SYS_perf_event_open,
        "a confined plugin may not watch other processes",
    ),
    (
        libc::SYS_userfaultfd,
        "a confined plugin may not use userfaultfd",
    ),
    (
        libc::SYS_init_module,
        "a confined plugin may not load kernel modules",
    ),
    (
        libc::SYS_finit_module,
        "a confined plugin may not load kernel modules",
    ),
    (
        libc::SYS_delete_module,
        "a confined plugin may not unload kernel modules",
    ),
    (
        libc::SYS_kexec_load,
        "a confined plugin may not replace the kernel",
    ),
    (
        libc::SYS_kexec_file_load,
        "a confined plugin may not replace the kernel",
    ),
    (
        libc::SYS_io_uring_setup,
        "a confined plugin may not use io_uring (its operations would go around the sandbox's checks)",
    ),
    (
        libc::SYS_io_uring_enter,
        "a confined plugin may not use io_uring (its operations would go around the sandbox's checks)",
    ),
    (
        libc::SYS_io_uring_register,
        "a confined plugin may not use io_uring (its operations would go around the sandbox's checks)",
    ),
    (
        libc::SYS_open_by_handle_at,
        "a confined plugin may not open files by handle (it would go around its grant)",
    ),
    (
        libc::SYS_name_to_handle_at,
        "a confined plugin may not open files by handle (it would go around its grant)",
    ),
    (
        libc::SYS_kcmp,
        "a confined plugin may not compare other processes' resources",
    ),
    (
        libc::SYS_pidfd_getfd,
        "a confined plugin may not take other processes' descriptors",
    ),
    (
        libc::SYS_pidfd_send_signal,
        "a confined plugin may not signal through a pidfd (use kill on its own processes)",
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_setrlimit,
        "a confined plugin may not change its limits (they bound it)",
    ),
    (
        libc::SYS_shmget,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_shmat,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_shmctl,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_semget,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_semop,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_semctl,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_msgget,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_msgsnd,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_msgrcv,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_msgctl,
        "a confined plugin may not use System V IPC (shared with every process of the machine)",
    ),
    (
        libc::SYS_mq_open,
        "a confined plugin may not use POSIX message queues (shared with every process of the machine)",
    ),
    (
        libc::SYS_mq_unlink,
        "a confined plugin may not use POSIX message queues (shared with every process of the machine)",
    ),
    (
        libc::SYS_sethostname,
        "a confined plugin may not rename the machine",
    ),
    (
        libc::SYS_setdomainname,
        "a confined plugin may not rename the machine",
    ),
    (
        libc::SYS_syslog,
        "a confined plugin may not read or change the kernel's log",
    ),
    (
        libc::SYS_fanotify_init,
        "a confined plugin may not watch the file system for other processes",
    ),
    (
        libc::SYS_reboot,
        "a confined plugin may not restart the machine",
    ),
    (libc::SYS_swapon, "a confined plugin may not change swap"),
    (libc::SYS_swapoff, "a confined plugin may not change swap"),
    (
        libc::SYS_acct,
        "a confined plugin may not change accounting",
    ),
    (
        libc::SYS_settimeofday,
        "a confined plugin may not set the clock",
    ),
    (
        libc::SYS_clock_settime,
        "a confined plugin may not set the clock",
    ),
    (
        libc::SYS_adjtimex,
        "a confined plugin may not set the clock",
    ),
    (
        libc::SYS_clock_adjtime,
        "a confined plugin may not set the clock",
    ),
    (
        libc::SYS_quotactl,
        "a confined plugin may not change disk quotas",
    ),
    (
        libc::SYS_personality,
        "a confined plugin may not change its execution domain",
    ),
    (
        libc::SYS_migrate_pages,
        "a confined plugin may not move other processes' pages",
    ),
    (
        libc::SYS_move_pages,
        "a confined plugin may not move other processes' pages",
    ),
    (
        libc::SYS_process_madvise,
        "a confined plugin may not advise on other processes' memory",
    ),
    (
        libc::SYS_memfd_secret,
        "a confined plugin may not make memory hidden from the kernel's accounting",
    ),
    (
        libc::SYS_vhangup,
        "a confined plugin may not hang up a terminal",
    ),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_iopl, "a confined plugin may not reach I/O ports"),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_ioperm,
        "a confined plugin may not reach I/O ports",
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_modify_ldt,
        "a confined plugin may not change its descriptor tables",
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

/// Calls that signal a process, allowed except at the host (see `signal_rules`).
const SIGNALS: &[i64] = &[
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
];

/// Calls allowed on the child's own process only (pid 0 or its own pid in their first
/// argument): the scheduling of another process is not the plugin's.
const OWN_SCHEDULING: &[i64] = &[
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
    libc::SYS_sched_setaffinity,
];

/// `ioctl` requests refused (the request is the second argument; the numbers of
/// `asm-generic/ioctls.h` and `sockios.h`, the same on x86-64 and AArch64).
const REFUSED_IOCTLS: &[(u64, &str, &str)] = &[
    (
        0x5412,
        "TIOCSTI",
        "a confined plugin may not type into a terminal",
    ),
    (
        0x541C,
        "TIOCLINUX",
        "a confined plugin may not type into a terminal",
    ),
    (
        0x5410,
        "TIOCSPGRP",
        "a confined plugin may not take a terminal from the host",
    ),
    (
        0x540E,
        "TIOCSCTTY",
        "a confined plugin may not take a terminal from the host",
    ),
    (
        0x541D,
        "TIOCCONS",
        "a confined plugin may not take a terminal from the host",
    ),
    (
        0x5423,
        "TIOCSETD",
        "a confined plugin may not take a terminal from the host",
    ),
    (
        0x8901,
        "FIOSETOWN",
        "a confined plugin may not have signals sent to another process",
    ),
    (
        0x8902,
        "SIOCSPGRP",
        "a confined plugin may not have signals sent to another process",
    ),
];

/// The `clone` flags never allowed: those that make a namespace (`unshare` is refused
/// too), and `CLONE_PARENT` (a process that would be the host's child, out of the child's
/// reach).
const NEW_NAMESPACES: u64 = (libc::CLONE_PARENT
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;

/// The processes the rules name: the child itself, the host, the host's process group.
#[derive(Debug, Clone, Copy)]
struct Known {
    own: u32,
    host: u32,
    host_group: u32,
    /// Whether the child is in the host's process group (then `kill(0)` reaches the host).
    shares_group: bool,
    /// Whether the grant's network is a list of hosts (sockets of some families allowed).
    hosts_only: bool,
}

impl Known {
    fn now() -> Known {
        // SAFETY: getpid, getppid and getpgid have no preconditions.
        let (own, host, group, host_group) = unsafe {
            let host = libc::getppid();
            (libc::getpid(), host, libc::getpgid(0), libc::getpgid(host))
        };
        Known {
            own: own as u32,
            host: host as u32,
            host_group: host_group as u32,
            shares_group: group == host_group,
            hosts_only: false,
        }
    }
}

/// Calls allowed in some forms only (besides [`SIGNALS`] and [`OWN_SCHEDULING`]): a refusal
/// of one of these, like one of [`REFUSED`], answers `EPERM`.
const FILTERED: &[i64] = &[
    libc::SYS_prlimit64,
    libc::SYS_setpriority,
    libc::SYS_ioprio_set,
    libc::SYS_fcntl,
    libc::SYS_ioctl,
    libc::SYS_mknodat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mknod,
    libc::SYS_clone,
    libc::SYS_socket,
    libc::SYS_setpgid,
];

/// `F_SETOWN_EX` (not in the libc crate for every target).
const F_SETOWN_EX: u64 = 15;

/// `IOPRIO_WHO_PROCESS`.
const IOPRIO_WHO_PROCESS: u64 = 1;

/// What a refused call answers: `EACCES` for a socket, `EPERM` for a call the filter
/// knows, `ENOSYS` for one it does not list at all. Async-signal-safe (reads constants).
fn answer(number: i64) -> i32 {
    if number == libc::SYS_socket {
        libc::EACCES
    } else if REFUSED.iter().any(|(n, _)| *n == number)
        || WITHOUT_EXEC.iter().any(|(n, ..)| *n == number)
        || SIGNALS.contains(&number)
        || OWN_SCHEDULING.contains(&number)
        || FILTERED.contains(&number)
    {
        libc::EPERM
    } else {
        libc::ENOSYS
    }
}

/// What a refused call is called and the rule it broke, for the report.
#[cfg(test)]
fn describe(number: i64, args: &[u64; 4], grant: &Grant, known: &Known) -> (String, String) {
    let (mut action, mut rule) = (String::new(), String::new());
    let _ = describe_into(number, args, &grant.plugin, known, &mut action, &mut rule);
    (action, rule)
}

/// Writes what a refused call is called into `action` and the rule it broke into `rule`,
/// without allocating (the reporting thread must not wait for the allocator's lock: a
/// thread refused inside `fork` holds it).
fn describe_into(
    number: i64,
    args: &[u64; 4],
    plugin: &str,
    known: &Known,
    action: &mut impl Write,
    rule: &mut impl Write,
) -> std::fmt::Result {
    // A pid argument (an int).
    let pid = |value: u64| value as u32 as i32;
    let name = super::syscall_names::name(number);
    let named = |action: &mut dyn Write| match name {
        Some(name) => action.write_str(name),
        None => write!(action, "system call {number}"),
    };
    let not_own = "a confined plugin may change the scheduling of its own process only";
    if number == libc::SYS_socket {
        write!(action, "socket(")?;
        match i32::try_from(args[0]).unwrap_or(-1) {
            libc::AF_INET => action.write_str("AF_INET")?,
            libc::AF_INET6 => action.write_str("AF_INET6")?,
            libc::AF_NETLINK => action.write_str("AF_NETLINK")?,
            libc::AF_PACKET => action.write_str("AF_PACKET")?,
            other => write!(action, "family {other}")?,
        }
        action.write_str(")")?;
        return rule.write_str(if known.hosts_only {
            "its grant's network is a list of hosts: Unix, IPv4 and IPv6 sockets only"
        } else {
            "its grant has network: no"
        });
    }
    if SIGNALS.contains(&number) {
        let target = pid(args[0]);
        named(action)?;
        if target as u32 == known.host {
            write!(action, " of the host (pid {target})")?;
        } else if target == -1 {
            action.write_str(" of every process (pid -1)")?;
        } else if target == 0 || target as u32 == known.host_group.wrapping_neg() {
            write!(
                action,
                " of the host's process group ({})",
                known.host_group
            )?;
        } else {
            write!(action, " of pid {target}")?;
        }
        return rule.write_str("a confined plugin may not signal the host or its process group");
    }
    if number == libc::SYS_prlimit64 {
        named(action)?;
        if args[2] != 0 {
            action.write_str(" setting a limit")?;
        }
        let target = pid(args[0]);
        if target != 0 && target as u32 != known.own {
            write!(action, " of pid {target}")?;
        }
        return rule.write_str(if args[2] != 0 {
            "a confined plugin may not change its limits (they bound it)"
        } else {
            "a confined plugin may not read another process's limits"
        });
    }
    if number == libc::SYS_setpriority {
        let which = match args[0] as u32 {
            0 => "pid",
            1 => "process group",
            2 => "user",
            _ => "target",
        };
        named(action)?;
        write!(action, " of {which} {}", pid(args[1]))?;
        return rule.write_str(not_own);
    }
    if OWN_SCHEDULING.contains(&number) || number == libc::SYS_ioprio_set {
        let target = if number == libc::SYS_ioprio_set {
            args[1]
        } else {
            args[0]
        };
        named(action)?;
        write!(action, " of pid {}", pid(target))?;
        return rule.write_str(not_own);
    }
    if number == libc::SYS_fcntl && args[1] as u32 as i32 == libc::F_SETLEASE {
        action.write_str("fcntl(F_SETLEASE)")?;
        return rule.write_str(
            "a confined plugin may not hold a lease (another process's open of the file would wait for it)",
        );
    }
    if number == libc::SYS_fcntl {
        if args[1] as u32 as u64 == F_SETOWN_EX {
            action.write_str("fcntl(F_SETOWN_EX)")?;
        } else {
            write!(action, "fcntl(F_SETOWN) to {}", pid(args[2]))?;
        }
        return rule.write_str("a confined plugin may not have signals sent to another process");
    }
    if number == libc::SYS_ioctl {
        let request = args[1] as u32 as u64;
        if let Some((_, words, words_rule)) = REFUSED_IOCTLS.iter().find(|(r, ..)| *r == request) {
            write!(action, "ioctl({words})")?;
            return rule.write_str(words_rule);
        }
    }
    #[cfg(target_arch = "x86_64")]
    let mknod = number == libc::SYS_mknod || number == libc::SYS_mknodat;
    #[cfg(not(target_arch = "x86_64"))]
    let mknod = number == libc::SYS_mknodat;
    if mknod {
        let mode = if number == libc::SYS_mknodat {
            args[2]
        } else {
            args[1]
        } as u32;
        let kind = match mode & libc::S_IFMT {
            libc::S_IFCHR => "a character device",
            libc::S_IFBLK => "a block device",
            _ => "a device",
        };
        named(action)?;
        write!(action, " of {kind}")?;
        return rule.write_str("a confined plugin may not make device files");
    }
    if number == libc::SYS_clone && args[0] & libc::CLONE_PARENT as u64 != 0 {
        action.write_str("clone with CLONE_PARENT")?;
        return rule.write_str("a confined plugin may not start processes of the host's");
    }
    if number == libc::SYS_clone && args[0] & NEW_NAMESPACES != 0 {
        action.write_str("clone with new namespaces")?;
        return rule.write_str("a confined plugin may not make namespaces");
    }
    if number == libc::SYS_setpgid {
        write!(
            action,
            "setpgid into the host's process group ({})",
            pid(args[1])
        )?;
        return rule.write_str("a confined plugin may not signal the host or its process group");
    }
    if let Some((_, refused_rule)) = REFUSED.iter().find(|(n, _)| *n == number) {
        named(action)?;
        return rule.write_str(refused_rule);
    }
    if let Some((_, name, exec_rule)) = WITHOUT_EXEC.iter().find(|(n, ..)| *n == number) {
        action.write_str(name)?;
        return rule.write_str(exec_rule);
    }
    named(action)?;
    write!(
        rule,
        "it is not among the system calls the sandbox of plugin {plugin} allows"
    )
}

/// Text written on the stack ([`Write`] without allocating); what does not fit is cut.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s are written (a cut one is cut at a char boundary).
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Write for StackText<N> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let room = N - self.len;
        let mut take = text.len().min(room);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
        self.len += take;
        if take < text.len() {
            Err(std::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// A condition on argument `arg`: its low 32 bits (`Dword`, an int) or all 64 (`Qword`).
fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| e.to_string())
}

/// A rule: every condition holds.
fn all(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// The calls the filter lets through for `grant`, each with the forms it allows (no rule:
/// any form; otherwise any one of the rules).
fn allowed(grant: &Grant, known: &Known) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    use SeccompCmpArgLen::{Dword, Qword};
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for number in ALLOWED.iter().chain(ALLOWED_X86_64) {
        rules.insert(*number, Vec::new());
    }
    // clone3's flags are in memory: it answers ENOSYS (a filter of its own) and the C
    // library falls back to clone, whose flags are checked here.
    rules.insert(libc::SYS_clone3, Vec::new());
    let own = u64::from(known.own);
    // Pid 0 or its own pid in argument `arg`, with `also` besides.
    let oneself = |arg: u8, also: &[SeccompCondition]| -> Result<Vec<SeccompRule>, String> {
        [0, own]
            .iter()
            .map(|pid| {
                let mut conditions = also.to_vec();
                conditions.push(cond(arg, Dword, Eq, *pid)?);
                all(conditions)
            })
            .collect()
    };
    let no_namespace = cond(0, Qword, MaskedEq(NEW_NAMESPACES), 0)?;
    if grant.exec.is_empty() {
        // clone(flags, ...) with CLONE_THREAD: a thread.
        let thread = cond(
            0,
            Qword,
            MaskedEq(libc::CLONE_THREAD as u64),
            libc::CLONE_THREAD as u64,
        )?;
        rules.insert(libc::SYS_clone, vec![all(vec![thread, no_namespace])?]);
    } else {
        for (number, ..) in WITHOUT_EXEC {
            rules.insert(*number, Vec::new());
        }
        rules.insert(libc::SYS_clone, vec![all(vec![no_namespace])?]);
    }
    if grant.network == crate::packages::manifest::Network::All {
        rules.insert(libc::SYS_socket, Vec::new());
    } else if grant.network.any() {
        // Host lists: the families whose addresses the supervisor checks, and netlink's
        // routing family, read-only without capabilities (getaddrinfo's AI_ADDRCONFIG).
        let mut families = Vec::new();
        for family in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            families.push(all(vec![cond(0, Dword, Eq, family as u64)?])?);
        }
        families.push(all(vec![
            cond(0, Dword, Eq, libc::AF_NETLINK as u64)?,
            cond(2, Dword, Eq, libc::NETLINK_ROUTE as u64)?,
        ])?);
        rules.insert(libc::SYS_socket, families);
    } else {
        let unix = cond(0, Dword, Eq, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socket, vec![all(vec![unix])?]);
    }
    // Signals: not the host, not its process group, not every process.
    let host = u64::from(known.host);
    let mut kill = vec![
        cond(0, Dword, Ne, host)?,
        cond(0, Dword, Ne, u64::from(u32::MAX))?,
        cond(0, Dword, Ne, u64::from(known.host_group.wrapping_neg()))?,
    ];
    if known.shares_group {
        kill.push(cond(0, Dword, Ne, 0)?);
    }
    rules.insert(libc::SYS_kill, vec![all(kill)?]);
    // Not into the host's process group (then kill(0) would reach the host).
    rules.insert(
        libc::SYS_setpgid,
        vec![all(vec![cond(1, Dword, Ne, u64::from(known.host_group))?])?],
    );
    for number in SIGNALS.iter().filter(|n| **n != libc::SYS_kill) {
        rules.insert(*number, vec![all(vec![cond(0, Dword, Ne, host)?])?]);
    }
    // Limits: read its own only.
    rules.insert(libc::SYS_prlimit64, oneself(0, &[cond(2, Qword, Eq, 0)?])?);
    rules.insert(
        libc::SYS_setpriority,
        oneself(1, &[cond(0, Dword, Eq, 0)?])?,
    );
    for number in OWN_SCHEDULING {
        rules.insert(*number, oneself(0, &[])?);
    }
    rules.insert(
        libc::SYS_ioprio_set,
        oneself(1, &[cond(0, Dword, Eq, IOPRIO_WHO_PROCESS)?])?,
    );
    for number in [libc::SYS_process_vm_readv, libc::SYS_process_vm_writev] {
        rules.insert(number, vec![all(vec![cond(0, Dword, Eq, own)?])?]);
    }
    // fcntl: F_SETOWN to itself only, no F_SETOWN_EX.
    let setown = libc::F_SETOWN as u64;
    let mut fcntl = vec![all(vec![
        cond(1, Dword, Ne, setown)?,
        cond(1, Dword, Ne, F_SETOWN_EX)?,
        cond(1, Dword, Ne, libc::F_SETLEASE as u64)?,
    ])?];
    fcntl.extend(oneself(2, &[cond(1, Dword, Eq, setown)?])?);
    rules.insert(libc::SYS_fcntl, fcntl);
    let ioctl = REFUSED_IOCTLS
        .iter()
        .map(|(request, ..)| cond(1, Dword, Ne, *request))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, vec![all(ioctl)?]);
    // mknod of anything but a device.
    let not_device = |arg: u8| -> Result<Vec<SeccompRule>, String> {
        [0, libc::S_IFREG, libc::S_IFIFO, libc::S_IFSOCK]
            .iter()
            .map(|kind| {
                all(vec![cond(
                    arg,
                    Dword,
                    MaskedEq(u64::from(libc::S_IFMT)),
                    u64::from(*kind),
                )?])
            })
            .collect()
    };
    rules.insert(libc::SYS_mknodat, not_device(2)?);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, not_device(1)?);
    Ok(rules)
}

/// Builds and installs the filter for `grant` on every thread of this process, with the
/// `SIGSYS` handler and the reporting thread (which also ends this process when the host
/// ends). `Ok`: what this system lacks, in the words of the "confined without ..." line.
pub fn apply(grant: &Grant) -> Result<Vec<String>, String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!("cannot confine plugin {} with seccomp: {e}", grant.plugin)
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| fail(&e))?;
    let known = Known {
        hosts_only: matches!(grant.network, crate::packages::manifest::Network::Hosts(_)),
        ..Known::now()
    };
    let rules = allowed(grant, &known).map_err(|e| fail(&e))?;
    let mut lacking = Vec::new();
    let host = watch(known.host);
    if host.is_none() {
        lacking.push(
            "an end with the host (pidfd_open, Linux 5.3; it ends when the host closes its pipes)"
                .to_owned(),
        );
    }
    start_reporting(grant.clone(), known, host).map_err(|e| fail(&e))?;
    let mut no_clone3 = BTreeMap::new();
    no_clone3.insert(libc::SYS_clone3, Vec::new());
    let programs = [
        (rules, SeccompAction::Trap, SeccompAction::Allow),
        (
            no_clone3,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
        ),
    ];
    for (rules, mismatch, matched) in programs {
        let filter = SeccompFilter::new(rules, mismatch, matched, arch).map_err(|e| fail(&e))?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| fail(&e))?;
        seccompiler::apply_filter_all_threads(&program).map_err(|e| fail(&e))?;
    }
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter_all_threads(&no_x32()).map_err(|e| fail(&e))?;
    Ok(lacking)
}

/// A pidfd of the host (`None`: the kernel has no `pidfd_open`, or the host is gone: then
/// this process was reparented, and is ended at once).
fn watch(host: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags, no pointer.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, host as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the kernel returned a new descriptor, owned by nobody else.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } as u32 != host {
        end_with_host(false);
    }
    Some(fd)
}

/// Ends this process, and its process group when it has one of its own (the programs the
/// plugin started), because the host has ended.
fn end_with_host(shares_group: bool) -> ! {
    super::cgroup::end_all();
    // SAFETY: kill of this process's own group (or of itself) and _exit: no memory touched.
    unsafe {
        if !shares_group {
            libc::kill(0, libc::SIGKILL);
        }
        libc::kill(libc::getpid(), libc::SIGKILL);
        libc::_exit(1)
    }
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

/// Installs the `SIGSYS` handler and starts the thread that reports what it passes on and
/// watches `host` (a pidfd of the host): when the host ends, this process ends too.
fn start_reporting(
    grant: Grant,
    known: Known,
    host: Option<std::os::fd::OwnedFd>,
) -> std::io::Result<()> {
    use rustix::pipe::PipeFlags;
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    // Both ends non-blocking: a handler never blocks reading a wake-up another took, and the
    // reporting thread never blocks on wake-ups nobody read.
    let (ack_read, ack_write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    {
        use std::os::fd::IntoRawFd;
        REPORT_FD.store(write.into_raw_fd(), Ordering::Release);
        ACK_FD.store(ack_read.into_raw_fd(), Ordering::Release);
    }
    let prepared = super::report::Prepared::new(&grant);
    std::thread::Builder::new()
        .name("pi-hooks-sandbox-report".into())
        .spawn(move || {
            use std::os::fd::AsRawFd;
            let mut read = std::fs::File::from(read);
            let mut record = [0u8; RECORD_BYTES];
            let host_fd = host.as_ref().map_or(-1, AsRawFd::as_raw_fd);
            loop {
                let mut fds = [
                    libc::pollfd {
                        fd: read.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: host_fd,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                // SAFETY: poll(2) on a local array of two pollfds (a negative fd is skipped).
                if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                    continue;
                }
                // The host has ended (or the plugin closed the pidfd: the same, fail closed).
                if fds[1].revents != 0 {
                    end_with_host(known.shares_group);
                }
                if fds[0].revents == 0 {
                    continue;
                }
                if read.read_exact(&mut record).is_err() {
                    return;
                }
                let word = |i: usize| {
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(&record[i * 8..i * 8 + 8]);
                    u64::from_ne_bytes(bytes)
                };
                let (number, sequence) = (word(0) as i64, word(1));
                let args = [word(2), word(3), word(4), word(5)];
                // Written on the stack and sent without allocating where it can be: the
                // refused thread may hold the allocator's lock (a refused fork does).
                let mut action = StackText::<256>::new();
                let mut rule = StackText::<512>::new();
                let mut reason = StackText::<600>::new();
                let _ = describe_into(number, &args, &grant.plugin, &known, &mut action, &mut rule);
                let _ = write!(reason, "refused by its seccomp filter: {}", rule.as_str());
                if !prepared.denied_without_allocating(action.as_str(), reason.as_str()) {
                    super::report::denied(action.as_str(), reason.as_str(), &grant);
                }
                // The report is out before the refused call returns, so the host sees it
                // before the answer of the call the plugin was making.
                SENT[sequence as usize % WAITING].store(sequence, Ordering::Release);
                // SAFETY: write(2) of one byte from a local, on our own non-blocking pipe.
                let _ = unsafe { libc::write(ack_write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
            }
        })?;
    // SAFETY: a zeroed sigaction is a valid starting point; the handler only calls write(2),
    // poll(2), read(2) and clock_gettime(2) and touches its own arguments and atomics, which
    // is async-signal-safe.
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

/// Milliseconds on the monotonic clock (async-signal-safe).
fn now_ms() -> i64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the local timespec passed.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec * 1000 + now.tv_nsec / 1_000_000
}

/// The `SIGSYS` handler: a refused call returns `-EPERM` (`-EACCES` for `socket`, `-ENOSYS`
/// for a call the filter does not know, see [`answer`]) and is passed to the reporting
/// thread; the call returns once its report went out (at most [`ACK_WAIT_MS`] later).
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
    let errno = answer(i64::from(number));
    let args = set_return(context, -i64::from(errno));
    let sequence = SEQUENCE.fetch_add(1, Ordering::AcqRel) + 1;
    let mut record = [0u8; RECORD_BYTES];
    record[..8].copy_from_slice(&i64::from(number).to_ne_bytes());
    record[8..16].copy_from_slice(&sequence.to_ne_bytes());
    for (i, arg) in args.iter().enumerate() {
        record[16 + i * 8..24 + i * 8].copy_from_slice(&arg.to_ne_bytes());
    }
    let fd = REPORT_FD.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    // SAFETY: write(2) of a local buffer; a pipe write of 48 bytes is atomic.
    let _ = unsafe { libc::write(fd, record.as_ptr().cast(), RECORD_BYTES) };
    let ack = ACK_FD.load(Ordering::Acquire);
    let deadline = now_ms() + ACK_WAIT_MS;
    let sent = &SENT[sequence as usize % WAITING];
    while sent.load(Ordering::Acquire) != sequence {
        let left = deadline - now_ms();
        if left <= 0 {
            break;
        }
        let mut poll = libc::pollfd {
            fd: ack,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut byte = 0u8;
        // SAFETY: poll(2) and a non-blocking read(2) on our own pipe with local buffers,
        // both async-signal-safe; the wait is bounded.
        unsafe {
            if libc::poll(&mut poll, 1, left.min(50) as i32) == 1 {
                let _ = libc::read(ack, (&mut byte as *mut u8).cast(), 1);
            }
        }
    }
}

/// Sets the interrupted call's return value in the signal context; returns its first four
/// arguments.
#[cfg(target_arch = "x86_64")]
fn set_return(context: *mut libc::c_void, value: i64) -> [u64; 4] {
    // SAFETY: for SA_SIGINFO handlers the third argument is the thread's ucontext_t.
    unsafe {
        let context = &mut *context.cast::<libc::ucontext_t>();
        let registers = &mut context.uc_mcontext.gregs;
        let args = [
            registers[libc::REG_RDI as usize] as u64,
            registers[libc::REG_RSI as usize] as u64,
            registers[libc::REG_RDX as usize] as u64,
            registers[libc::REG_R10 as usize] as u64,
        ];
        registers[libc::REG_RAX as usize] = value;
        args
    }
}

/// Elsewhere the call returns what the kernel left (`-ENOSYS`); the arguments are not read.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn set_return(_context: *mut libc::c_void, _value: i64) -> [u64; 4] {
    [0; 4]
}

/// Sets the interrupted call's return value in the signal context; returns its first four
/// arguments (`x0` holds the first and the return value).
#[cfg(target_arch = "aarch64")]
fn set_return(context: *mut libc::c_void, value: i64) -> [u64; 4] {
    // SAFETY: for SA_SIGINFO handlers the third argument is the thread's ucontext_t.
    unsafe {
        let context = &mut *context.cast::<libc::ucontext_t>();
        let registers = &mut context.uc_mcontext.regs;
        let args = [registers[0], registers[1], registers[2], registers[3]];
        registers[0] = value as u64;
        args
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

    fn grant(exec: &[&str]) -> Grant {
        let mut grant: Grant = serde_json::from_value(serde_json::json!({
            "plugin": "gate", "source": "settings.json", "read": [], "write": [],
            "network": false, "exec": [], "execPaths": [], "memoryMib": null, "data": "/d"
        }))
        .unwrap();
        grant.exec = exec.iter().map(|e| (*e).to_owned()).collect();
        grant
    }

    #[test]
    fn the_allow_list_compiles_for_every_kind_of_grant() {
        let known = Known {
            own: 100,
            host: 50,
            host_group: 50,
            shares_group: false,
            hosts_only: false,
        };
        for exec in [&[][..], &["sh"][..]] {
            let rules = allowed(&grant(exec), &known).unwrap();
            // Refused calls are never in the list.
            for (number, _) in REFUSED.iter().filter(|(n, _)| {
                *n != libc::SYS_process_vm_readv && *n != libc::SYS_process_vm_writev
            }) {
                assert!(!rules.contains_key(number), "{number}");
            }
            assert_eq!(rules.contains_key(&libc::SYS_execve), !exec.is_empty());
            let filter = SeccompFilter::new(
                rules,
                SeccompAction::Trap,
                SeccompAction::Allow,
                TargetArch::x86_64,
            )
            .unwrap();
            let program: BpfProgram = filter.try_into().unwrap();
            assert!(program.len() > ALLOWED.len());
        }
    }

    #[test]
    fn a_refusal_is_named_by_its_call_and_answered_as_a_kernel_would() {
        let known = Known {
            own: 100,
            host: 50,
            host_group: 40,
            shares_group: false,
            hosts_only: false,
        };
        let grant = grant(&[]);
        let name = |number, args: [u64; 4]| describe(number, &args, &grant, &known).0;
        assert_eq!(
            name(libc::SYS_kill, [50, 0, 0, 0]),
            "kill of the host (pid 50)"
        );
        assert_eq!(
            name(libc::SYS_kill, [(-40i64) as u64, 0, 0, 0]),
            "kill of the host's process group (40)"
        );
        assert_eq!(
            name(libc::SYS_prlimit64, [50, 7, 0x1000, 0]),
            "prlimit64 setting a limit of pid 50"
        );
        assert_eq!(
            name(libc::SYS_prlimit64, [0, 7, 0x1000, 0]),
            "prlimit64 setting a limit"
        );
        assert_eq!(
            name(libc::SYS_mknodat, [0, 0, u64::from(libc::S_IFBLK), 0]),
            "mknodat of a block device"
        );
        assert_eq!(name(libc::SYS_ioctl, [0, 0x5412, 0, 0]), "ioctl(TIOCSTI)");
        assert_eq!(name(libc::SYS_io_uring_setup, [0; 4]), "io_uring_setup");
        assert_eq!(name(libc::SYS_sysfs, [0; 4]), "sysfs");
        assert_eq!(answer(libc::SYS_socket), libc::EACCES);
        assert_eq!(answer(libc::SYS_io_uring_setup), libc::EPERM);
        assert_eq!(answer(libc::SYS_kill), libc::EPERM);
        assert_eq!(answer(libc::SYS_sysfs), libc::ENOSYS);
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
