//! The calls the supervisor checks and makes itself, because neither Landlock nor the seccomp
//! filter can judge them: reaching a Unix socket and sending to an address (`connect`,
//! `sendto` with an address, `sendmsg`, `sendmmsg`, `bind`), and changing or watching a file's
//! metadata (`chmod`, `chown`, `utimensat`, the `*xattr` calls, `inotify_add_watch`).
//!
//! Nothing is judged in the plugin's memory and then made from it again (the plugin could
//! change it in between): the supervisor copies what the call names (an address, a
//! `msghdr`, a path) and makes the call from its copy.
//! - A socket address is copied. A pathname Unix socket is opened by the supervisor
//!   (`O_PATH`: no second resolution), the file it opened must be in what the plugin may
//!   write, and the call is made on the plugin's descriptor (same process, same descriptor
//!   table) with the address `/proc/self/fd/N` of that handle, so what was checked is what is
//!   reached. An abstract socket (`@name`) needs `network: true` (without, Landlock's scoping
//!   already keeps the plugin from those made outside its sandbox; the supervisor names the
//!   refusal). An Internet address is checked against the grant's hosts when the grant names
//!   hosts ([`crate::sandbox::network`]); with `network: true` any is made. `bind` of a
//!   pathname socket is made as asked: Landlock's `MAKE_SOCK` right refuses one outside the
//!   write grant, and the supervisor names that refusal.
//! - A path is opened `O_PATH` (with `O_NOFOLLOW` where the call does not follow a last
//!   link), the opened file's real path (`/proc/self/fd/N`) is checked, and the call is made
//!   through `/proc/self/fd/N`. A descriptor is duplicated first and the duplicate checked and
//!   used (a descriptor that names no file, such as a pipe or a socket, is not judged).
//!   Changing metadata needs the write grant, watching (`inotify_add_watch`) the read grant.
//!
//! A refusal answers `EACCES` (`EPERM` for an abstract socket, as Landlock's scoping would)
//! and is named by the naming thread (`super::naming`, [`super::naming::Refusal`]).
//!
//! A call that may block (`connect` on a blocking socket; a send that would block) is handed
//! to one of two performer threads (started before the notifying filter, so their own calls
//! are not notified), so the supervisor goes on answering; with both busy, the supervisor
//! makes it itself and the other notified calls wait. A send is first made with
//! `MSG_DONTWAIT`: a blocking send may so return fewer bytes than asked (which `send` may).
//! `sendmmsg` sends the first message and those after it that name no address (at most 64;
//! it may send fewer than asked).
//!
//! Nothing here allocates (see the supervisor's module text).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::captured::{PATH_MAX, POOL, folder, read_text};
use super::naming::{NamingLink, Refusal, read_memory};
use super::{LISTENER, errno};
use crate::sandbox::Grant;

/// The verbs of the refusals named here, by index.
pub const VERBS: &[&str] = &[
    "connect",
    "sendto",
    "sendmsg",
    "bind",
    "chmod",
    "chown",
    "utimensat",
    "setxattr",
    "removexattr",
    "inotify_add_watch",
    "stat",
    "readlink",
    "access",
];

const CONNECT: usize = 0;
const SENDTO: usize = 1;
const SENDMSG: usize = 2;
const BIND: usize = 3;
const CHMOD: usize = 4;
const CHOWN: usize = 5;
const UTIMENSAT: usize = 6;
const SETXATTR: usize = 7;
const REMOVEXATTR: usize = 8;
const WATCH: usize = 9;
const STAT: usize = 10;
const READLINK: usize = 11;
const ACCESS: usize = 12;

/// Whether `stat`, `readlink` and `access` of paths are checked against the read grant. Not
/// now (see the module's text): each would cost a round trip to the supervisor (a `stat`
/// loop measured 17.0 µs a call against 2.4 µs unconfined, median of five runs of 200,000),
/// and code that looks at paths outside its grant on its way (the loader checks the plugin
/// cache folder's owner and mode) would fail.
const CHECK_LOOKS: bool = false;

/// The looks at a path checked here (when [`CHECK_LOOKS`]).
const LOOKS: &[Meta] = &[
    Meta {
        nofollow: NoFollow::Flag(3, NOFOLLOW),
        at_flags: Some(3),
        ..look(
            libc::SYS_newfstatat,
            STAT,
            Target::Path(Some(0), 1),
            Look::Stat(2),
        )
    },
    Meta {
        nofollow: NoFollow::Flag(2, NOFOLLOW),
        at_flags: Some(2),
        ..look(
            libc::SYS_statx,
            STAT,
            Target::Path(Some(0), 1),
            Look::Statx(2, 3, 4),
        )
    },
    #[cfg(target_arch = "x86_64")]
    look(libc::SYS_stat, STAT, Target::Path(None, 0), Look::Stat(1)),
    #[cfg(target_arch = "x86_64")]
    Meta {
        nofollow: NoFollow::Always(libc::SYS_stat),
        ..look(libc::SYS_lstat, STAT, Target::Path(None, 0), Look::Stat(1))
    },
    #[cfg(target_arch = "x86_64")]
    Meta {
        nofollow: NoFollow::Always(libc::SYS_readlink),
        ..look(
            libc::SYS_readlink,
            READLINK,
            Target::Path(None, 0),
            Look::Readlink(1, 2),
        )
    },
    Meta {
        nofollow: NoFollow::Always(libc::SYS_readlinkat),
        ..look(
            libc::SYS_readlinkat,
            READLINK,
            Target::Path(Some(0), 1),
            Look::Readlink(2, 3),
        )
    },
    #[cfg(target_arch = "x86_64")]
    look(
        libc::SYS_access,
        ACCESS,
        Target::Path(None, 0),
        Look::Access(1, None),
    ),
    look(
        libc::SYS_faccessat,
        ACCESS,
        Target::Path(Some(0), 1),
        Look::Access(2, None),
    ),
    Meta {
        nofollow: NoFollow::Flag(3, NOFOLLOW),
        at_flags: Some(3),
        ..look(
            libc::SYS_faccessat2,
            ACCESS,
            Target::Path(Some(0), 1),
            Look::Access(2, Some(3)),
        )
    },
];

/// `setxattrat` and `removexattrat` (Linux 6.13; one number on every architecture, not in
/// the libc crate).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// The socket calls checked here.
pub const SOCKET_CALLS: &[i64] = &[
    libc::SYS_connect,
    libc::SYS_sendto,
    libc::SYS_sendmsg,
    libc::SYS_sendmmsg,
    libc::SYS_bind,
];

/// How a call that must not follow a last link says so.
#[derive(Clone, Copy)]
enum NoFollow {
    /// It always follows.
    Never,
    /// It never follows (`lchown`, ...); the number of its following form.
    Always(i64),
    /// When this argument has this bit.
    Flag(usize, u64),
}

/// What a metadata call names.
#[derive(Clone, Copy)]
enum Target {
    /// A path: (its folder descriptor's argument, if any; the path's argument).
    Path(Option<usize>, usize),
    /// A descriptor's argument.
    Fd(usize),
}

/// One metadata call checked here.
struct Meta {
    number: i64,
    verb: usize,
    /// Needs the write grant (else the read grant).
    write: bool,
    target: Target,
    nofollow: NoFollow,
    /// The argument of its `AT_*` flags, where `AT_EMPTY_PATH` makes an empty path name the
    /// folder descriptor itself.
    at_flags: Option<usize>,
    /// A null path names the folder descriptor itself (`utimensat`, `futimesat`).
    null_is_fd: bool,
    /// A look (`stat`, `readlink`, `access`): made on the handle itself (`AT_EMPTY_PATH`),
    /// and the folders on the way to the grant may be looked at too.
    look: Option<Look>,
}

/// How a look is made on the handle.
#[derive(Clone, Copy)]
enum Look {
    /// `newfstatat(handle, "", buf, AT_EMPTY_PATH)`; the argument of `buf`.
    Stat(usize),
    /// `statx(handle, "", AT_EMPTY_PATH | flags, mask, buf)`; the arguments of the flags,
    /// the mask and `buf`.
    Statx(usize, usize, usize),
    /// `readlinkat(handle, "", buf, size)`; the arguments of `buf` and `size`.
    Readlink(usize, usize),
    /// `faccessat2(handle, "", mode, AT_EMPTY_PATH | flags)`; the arguments of the mode and
    /// (where the call has them) the flags.
    Access(usize, Option<usize>),
}

const fn meta(number: i64, verb: usize, write: bool, target: Target) -> Meta {
    Meta {
        number,
        verb,
        write,
        target,
        nofollow: NoFollow::Never,
        at_flags: None,
        null_is_fd: false,
        look: None,
    }
}

const fn look(number: i64, verb: usize, target: Target, how: Look) -> Meta {
    Meta {
        look: Some(how),
        ..meta(number, verb, false, target)
    }
}

const NOFOLLOW: u64 = libc::AT_SYMLINK_NOFOLLOW as u64;

/// The metadata calls checked here.
const METADATA: &[Meta] = &[
    #[cfg(target_arch = "x86_64")]
    meta(libc::SYS_chmod, CHMOD, true, Target::Path(None, 0)),
    meta(libc::SYS_fchmodat, CHMOD, true, Target::Path(Some(0), 1)),
    Meta {
        nofollow: NoFollow::Flag(3, NOFOLLOW),
        at_flags: Some(3),
        ..meta(libc::SYS_fchmodat2, CHMOD, true, Target::Path(Some(0), 1))
    },
    meta(libc::SYS_fchmod, CHMOD, true, Target::Fd(0)),
    #[cfg(target_arch = "x86_64")]
    meta(libc::SYS_chown, CHOWN, true, Target::Path(None, 0)),
    #[cfg(target_arch = "x86_64")]
    Meta {
        nofollow: NoFollow::Always(libc::SYS_chown),
        ..meta(libc::SYS_lchown, CHOWN, true, Target::Path(None, 0))
    },
    Meta {
        nofollow: NoFollow::Flag(4, NOFOLLOW),
        at_flags: Some(4),
        ..meta(libc::SYS_fchownat, CHOWN, true, Target::Path(Some(0), 1))
    },
    meta(libc::SYS_fchown, CHOWN, true, Target::Fd(0)),
    Meta {
        nofollow: NoFollow::Flag(3, NOFOLLOW),
        at_flags: Some(3),
        null_is_fd: true,
        ..meta(
            libc::SYS_utimensat,
            UTIMENSAT,
            true,
            Target::Path(Some(0), 1),
        )
    },
    #[cfg(target_arch = "x86_64")]
    meta(libc::SYS_utime, UTIMENSAT, true, Target::Path(None, 0)),
    #[cfg(target_arch = "x86_64")]
    meta(libc::SYS_utimes, UTIMENSAT, true, Target::Path(None, 0)),
    #[cfg(target_arch = "x86_64")]
    Meta {
        null_is_fd: true,
        ..meta(
            libc::SYS_futimesat,
            UTIMENSAT,
            true,
            Target::Path(Some(0), 1),
        )
    },
    meta(libc::SYS_setxattr, SETXATTR, true, Target::Path(None, 0)),
    Meta {
        nofollow: NoFollow::Always(libc::SYS_setxattr),
        ..meta(libc::SYS_lsetxattr, SETXATTR, true, Target::Path(None, 0))
    },
    meta(libc::SYS_fsetxattr, SETXATTR, true, Target::Fd(0)),
    Meta {
        nofollow: NoFollow::Flag(2, NOFOLLOW),
        at_flags: Some(2),
        ..meta(SYS_SETXATTRAT, SETXATTR, true, Target::Path(Some(0), 1))
    },
    meta(
        libc::SYS_removexattr,
        REMOVEXATTR,
        true,
        Target::Path(None, 0),
    ),
    Meta {
        nofollow: NoFollow::Always(libc::SYS_removexattr),
        ..meta(
            libc::SYS_lremovexattr,
            REMOVEXATTR,
            true,
            Target::Path(None, 0),
        )
    },
    meta(libc::SYS_fremovexattr, REMOVEXATTR, true, Target::Fd(0)),
    Meta {
        nofollow: NoFollow::Flag(2, NOFOLLOW),
        at_flags: Some(2),
        ..meta(
            SYS_REMOVEXATTRAT,
            REMOVEXATTR,
            true,
            Target::Path(Some(0), 1),
        )
    },
    Meta {
        nofollow: NoFollow::Flag(2, libc::IN_DONT_FOLLOW as u64),
        ..meta(
            libc::SYS_inotify_add_watch,
            WATCH,
            false,
            Target::Path(None, 1),
        )
    },
];

/// The numbers of every call checked here.
pub fn numbers() -> impl Iterator<Item = i64> {
    SOCKET_CALLS
        .iter()
        .copied()
        .chain(metadata().map(|m| m.number))
}

/// The metadata calls and looks checked here.
fn metadata() -> impl Iterator<Item = &'static Meta> {
    METADATA.iter().chain(LOOKS.iter().filter(|_| CHECK_LOOKS))
}

/// Whether `number` is checked here.
pub fn is_checked(number: i64) -> bool {
    numbers().any(|n| n == number)
}

/// What the plugin may reach, as the real paths of the grant's folders and files (and what
/// the sandbox adds), made ahead so that checking allocates nothing.
pub struct Reach {
    read: Vec<Vec<u8>>,
    write: Vec<Vec<u8>>,
    /// `/proc/<own pid>`: the process's own files, which it may look at.
    own: Vec<u8>,
    /// This process's executable (the `pi-hooks` binary).
    exe: Vec<u8>,
    /// `network: true`: abstract sockets and any address.
    network_all: bool,
    /// A list of hosts: addresses are checked ([`crate::sandbox::network`]).
    network_hosts: bool,
}

impl Reach {
    /// From `reach` (the grant with what the sandbox adds).
    pub fn new(reach: &Grant) -> Reach {
        use std::os::unix::ffi::OsStrExt;
        let real = |paths: &[std::path::PathBuf]| -> Vec<Vec<u8>> {
            paths
                .iter()
                .map(|p| {
                    std::fs::canonicalize(p)
                        .unwrap_or_else(|_| crate::sandbox::grant::normalize(p))
                        .as_os_str()
                        .as_bytes()
                        .to_vec()
                })
                .collect()
        };
        Reach {
            read: real(&reach.read),
            write: real(&reach.write),
            // SAFETY: getpid has no preconditions.
            own: format!("/proc/{}", unsafe { libc::getpid() }).into_bytes(),
            exe: std::fs::read_link("/proc/self/exe")
                .map(|p| p.as_os_str().as_bytes().to_vec())
                .unwrap_or_default(),
            network_all: reach.network == crate::packages::manifest::Network::All,
            network_hosts: matches!(
                &reach.network,
                crate::packages::manifest::Network::Hosts(hosts) if !hosts.is_empty()
            ),
        }
    }

    /// Whether the real path `real` is beneath what the plugin may write (`write`) or read.
    fn within(&self, real: &[u8], write: bool) -> bool {
        let beneath = |root: &Vec<u8>| {
            real.starts_with(root)
                && (real.len() == root.len()
                    || root.last() == Some(&b'/')
                    || real[root.len()] == b'/')
        };
        self.write.iter().any(beneath) || (!write && self.read.iter().any(beneath))
    }

    /// Whether the real path `real` may be looked at: beneath what the plugin may read, a
    /// folder on the way to it (`/`, `/home`, ...: resolving a path looks at each), or the
    /// process's own files under `/proc`.
    fn visible(&self, real: &[u8]) -> bool {
        let on_the_way = |root: &Vec<u8>| {
            root.starts_with(real)
                && (real.len() == root.len() || real == b"/" || root[real.len()] == b'/')
        };
        let own = real.starts_with(&self.own)
            && (real.len() == self.own.len() || real[self.own.len()] == b'/');
        own || self.within(real, false)
            || self
                .read
                .iter()
                .chain(&self.write)
                .chain(std::iter::once(&self.own))
                .any(on_the_way)
    }
}

/// What the supervisor does with its answer.
pub enum Answer {
    /// Send `response` as filled.
    Respond,
    /// A performer thread answers.
    Handed,
}

/// A handle opened here, closed when dropped.
struct Handle(RawFd);

impl Drop for Handle {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: the descriptor was opened here and is closed once.
            unsafe { libc::close(self.0) };
        }
    }
}

impl Handle {
    /// Gives the descriptor up (a performer closes it).
    fn release(mut self) -> RawFd {
        std::mem::replace(&mut self.0, -1)
    }
}

/// `/proc/self/fd/N`, NUL-terminated, in `buffer`; its length without the NUL.
fn proc_path(fd: RawFd, buffer: &mut [u8; 32]) -> usize {
    let prefix = b"/proc/self/fd/";
    buffer.fill(0);
    buffer[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut count) = (fd as u32, 0);
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, digit) in digits[..count].iter().rev().enumerate() {
        buffer[prefix.len() + i] = *digit;
    }
    prefix.len() + count
}

/// Reports `refusal` of the call of `request` with `text` (and for a relative path `base`),
/// through the naming thread; counted when no slot is free.
fn name(
    link: &NamingLink,
    request: &libc::seccomp_notif,
    verb: usize,
    refusal: Refusal,
    text: &[u8],
    base: Option<&[u8]>,
) {
    match POOL.claim() {
        Some(mut slot) => {
            slot.set_text(text, base);
            link.refused(request, verb, refusal, slot);
        }
        None => {
            super::naming::NO_SLOT.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Answers the checked call of `request` (see the module's text) into `response`.
pub fn answer(
    request: &libc::seccomp_notif,
    link: &NamingLink,
    reach: &Reach,
    response: &mut libc::seccomp_notif_resp,
) -> Answer {
    let number = i64::from(request.data.nr);
    let result = if SOCKET_CALLS.contains(&number) {
        return socket_call(request, link, reach, response);
    } else if let Some(meta) = metadata().find(|m| m.number == number) {
        metadata_call(meta, request, link, reach)
    } else {
        Err(libc::ENOSYS)
    };
    match result {
        Ok(value) => response.val = value,
        Err(error) => response.error = -error,
    }
    Answer::Respond
}

/// Opens `path` (NUL-terminated in `text`) relative to `dir` as an `O_PATH` handle.
fn open_handle(dir: i32, text: &[u8], nofollow: bool) -> Result<Handle, i32> {
    let flags = libc::O_PATH | libc::O_CLOEXEC | if nofollow { libc::O_NOFOLLOW } else { 0 };
    // SAFETY: `text` is NUL-terminated (its callers make it so); openat copies it.
    let fd = unsafe { libc::openat(dir, text.as_ptr().cast(), flags) };
    if fd < 0 { Err(errno()) } else { Ok(Handle(fd)) }
}

/// Whether the handle `fd` is a symbolic link.
fn is_link(fd: RawFd) -> bool {
    // SAFETY: an all-zero stat is a valid value; fstat fills it.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor of this process into a local.
    unsafe { libc::fstat(fd, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFLNK }
}

/// A metadata call: checked on a handle, made through it.
fn metadata_call(
    meta: &Meta,
    request: &libc::seccomp_notif,
    link: &NamingLink,
    reach: &Reach,
) -> Result<i64, i32> {
    let mut args = request.data.args;
    let number = meta.number;
    let mut real = [0u8; PATH_MAX];
    let refusal = if meta.write {
        Refusal::Write
    } else {
        Refusal::Read
    };
    // A descriptor: the call names it (or its folder descriptor with an empty or null path).
    let fd_arg = match meta.target {
        Target::Fd(i) => Some(i),
        Target::Path(dir, path) => {
            let empty = meta
                .at_flags
                .is_some_and(|f| args[f] & libc::AT_EMPTY_PATH as u64 != 0)
                && {
                    let mut first = [0u8; 1];
                    read_memory(args[path], &mut first) == 1 && first[0] == 0
                };
            let null = meta.null_is_fd && args[path] == 0;
            if empty || null { dir } else { None }
        }
    };
    if let Some(i) = fd_arg {
        // The empty path is ours from here on (the plugin's could be changed meanwhile).
        if let Target::Path(_, path) = meta.target
            && args[path] != 0
        {
            args[path] = EMPTY.as_ptr() as u64;
        }
        if meta.look.is_some() {
            // A look at a descriptor the plugin holds (opened through the checks).
            // SAFETY: the plugin's call, its empty path replaced by ours.
            return unsafe { super::make_again(number, &args) };
        }
        // SAFETY: F_DUPFD_CLOEXEC of a descriptor number: at worst EBADF.
        let dup = unsafe { libc::fcntl(args[i] as i32, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(errno());
        }
        let dup = Handle(dup);
        let len = folder(dup.0, &mut real).ok_or(libc::EBADF)?;
        // A descriptor that names no file (a pipe, a socket) is not judged.
        if real.first() == Some(&b'/') && !reach.within(&real[..len], meta.write) {
            name(link, request, meta.verb, refusal, &real[..len], None);
            return Err(libc::EACCES);
        }
        args[i] = dup.0 as u64;
        // SAFETY: the plugin's call with its descriptor replaced by a duplicate of it.
        return unsafe { super::make_again(number, &args) };
    }
    let Target::Path(dir, path) = meta.target else {
        return Err(libc::EINVAL);
    };
    let mut text = [0u8; PATH_MAX];
    let len = read_text(args[path], &mut text).ok_or(libc::EFAULT)?;
    let dir_fd = dir.map_or(libc::AT_FDCWD, |d| args[d] as i32);
    let nofollow = match meta.nofollow {
        NoFollow::Never => false,
        NoFollow::Always(_) => true,
        NoFollow::Flag(i, bit) => args[i] & bit != 0,
    };
    let handle = open_handle(dir_fd, &text[..=len], nofollow)?;
    let real_len = folder(handle.0, &mut real).ok_or(libc::EACCES)?;
    if let Some(how) = meta.look {
        if !reach.visible(&real[..real_len]) {
            name(link, request, meta.verb, refusal, &real[..real_len], None);
            return Err(libc::EACCES);
        }
        return look_through(handle.0, how, &args);
    }
    if !reach.within(&real[..real_len], meta.write) {
        name(link, request, meta.verb, refusal, &real[..real_len], None);
        return Err(libc::EACCES);
    }
    let mut through = [0u8; 32];
    proc_path(handle.0, &mut through);
    let mut number = number;
    if nofollow && is_link(handle.0) {
        // The link itself: only its owner can be changed (through the handle); the kernel
        // refuses the rest on a link anyway.
        return match (meta.verb, meta.target) {
            (CHOWN, _) => {
                let (owner, group) = match meta.nofollow {
                    NoFollow::Always(_) => (args[1], args[2]),
                    _ => (args[2], args[3]),
                };
                let empty = b"\0";
                let chown = [
                    handle.0 as u64,
                    empty.as_ptr() as u64,
                    owner,
                    group,
                    libc::AT_EMPTY_PATH as u64,
                    0,
                ];
                // SAFETY: fchownat of the handle itself, with the plugin's owner and group.
                unsafe { super::make_again(libc::SYS_fchownat, &chown) }
            }
            (CHMOD, _) => Err(libc::EOPNOTSUPP),
            _ => Err(libc::EPERM),
        };
    }
    match meta.nofollow {
        NoFollow::Never => {}
        NoFollow::Always(following) => number = following,
        NoFollow::Flag(i, bit) => args[i] &= !bit,
    }
    if let Some(d) = dir {
        args[d] = libc::AT_FDCWD as u64;
    }
    args[path] = through.as_ptr() as u64;
    // SAFETY: the plugin's call, naming the file the handle holds through /proc/self/fd/N
    // (a local, alive for the call) instead of its path.
    unsafe { super::make_again(number, &args) }
}

/// An empty path, for calls made on a descriptor (`AT_EMPTY_PATH`).
static EMPTY: [u8; 1] = [0];

/// Makes a look (`how`, with the plugin's `args`) on the handle `handle` itself.
fn look_through(handle: RawFd, how: Look, args: &[u64; 6]) -> Result<i64, i32> {
    let fd = handle as u64;
    let empty = EMPTY.as_ptr() as u64;
    let at_empty = libc::AT_EMPTY_PATH as u64;
    let (number, call) = match how {
        Look::Stat(buf) => (libc::SYS_newfstatat, [fd, empty, args[buf], at_empty, 0, 0]),
        Look::Statx(flags, mask, buf) => (
            libc::SYS_statx,
            [
                fd,
                empty,
                (args[flags] & !NOFOLLOW) | at_empty,
                args[mask],
                args[buf],
                0,
            ],
        ),
        Look::Readlink(buf, size) => (
            libc::SYS_readlinkat,
            [fd, empty, args[buf], args[size], 0, 0],
        ),
        Look::Access(mode, flags) => {
            let flags = flags.map_or(0, |f| args[f] & libc::AT_EACCESS as u64);
            (
                libc::SYS_faccessat2,
                [fd, empty, args[mode], flags | at_empty, 0, 0],
            )
        }
    };
    // SAFETY: the look the plugin asked for (its buffers, in the same address space), made
    // on the handle the supervisor opened and checked.
    unsafe { super::make_again(number, &call) }
}

/// The longest socket address copied (`sockaddr_storage`).
const ADDRESS_MAX: usize = 128;

/// One socket call as made from the supervisor's copy: the call, its arguments and the
/// copies its pointers are set to point at by [`Job::make`]. Plain data (sent to a
/// performer through a pipe as bytes).
#[derive(Clone, Copy)]
#[repr(C)]
struct Job {
    id: u64,
    number: i64,
    args: [u64; 6],
    /// The address to use (`address_len` 0: none).
    address: [u8; ADDRESS_MAX],
    address_len: u32,
    /// `sendmsg` / `sendmmsg`: the copied `mmsghdr` (a `msghdr` and its `msg_len`).
    message: libc::mmsghdr,
    /// `sendmmsg`: where the plugin's first `msg_len` is (0: not sendmmsg).
    length_at: u64,
    /// A handle to close once the call is made (-1: none).
    handle: RawFd,
}

impl Job {
    /// Makes the call, with its pointers at this job's copies.
    fn make(&mut self) -> Result<i64, i32> {
        let mut args = self.args;
        let address = if self.address_len == 0 {
            std::ptr::null_mut()
        } else {
            self.address.as_mut_ptr()
        };
        match self.number {
            libc::SYS_connect | libc::SYS_bind => {
                args[1] = address as u64;
                args[2] = u64::from(self.address_len);
            }
            libc::SYS_sendto => {
                args[4] = address as u64;
                args[5] = u64::from(self.address_len);
            }
            libc::SYS_sendmsg | libc::SYS_sendmmsg => {
                self.message.msg_hdr.msg_name = address.cast();
                self.message.msg_hdr.msg_namelen = self.address_len;
                args[1] = &mut self.message as *mut libc::mmsghdr as u64;
                if self.number == libc::SYS_sendmmsg {
                    args[2] = 1;
                }
            }
            _ => {}
        }
        // SAFETY: the plugin's socket call, its pointers set to this job's copies of what
        // they pointed at (the data sent is still read from the plugin's memory, the same
        // address space).
        let result = unsafe { super::make_again(self.number, &args) };
        let result = match result {
            Ok(1) if self.number == libc::SYS_sendmmsg => {
                let length = self.message.msg_len.to_ne_bytes();
                let at = self.length_at + std::mem::offset_of!(libc::mmsghdr, msg_len) as u64;
                write_memory(at, &length);
                Ok(1 + self.send_unnamed_rest())
            }
            other => other,
        };
        if self.handle >= 0 {
            // SAFETY: the handle was opened by the supervisor for this call alone.
            unsafe { libc::close(self.handle) };
            self.handle = -1;
        }
        result
    }
}

impl Job {
    /// `sendmmsg`, its first message sent: sends the next ones that name no address (a
    /// connected socket's; at most [`MORE_MESSAGES`], without waiting), each copied first;
    /// how many were sent. One that names an address ends it (the plugin sends it again).
    fn send_unnamed_rest(&self) -> i64 {
        let size = std::mem::size_of::<libc::mmsghdr>() as u64;
        let count = self.args[2].min(MORE_MESSAGES + 1);
        let flags = self.args[3] | libc::MSG_DONTWAIT as u64;
        let mut sent = 0;
        for index in 1..count {
            let at = self.length_at + index * size;
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut message: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: the message's bytes are copied over a local of its type (plain data).
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    (&mut message as *mut libc::mmsghdr).cast::<u8>(),
                    size as usize,
                )
            };
            if read_memory(at, bytes) != bytes.len()
                || !message.msg_hdr.msg_name.is_null() && message.msg_hdr.msg_namelen != 0
            {
                break;
            }
            message.msg_hdr.msg_name = std::ptr::null_mut();
            message.msg_hdr.msg_namelen = 0;
            // SAFETY: sendmsg of the plugin's socket with a copy of its message, which names
            // no address (its data is read from the plugin's memory, the same address space).
            let result =
                unsafe { libc::sendmsg(self.args[0] as i32, &message.msg_hdr, flags as i32) };
            if result < 0 {
                break;
            }
            let length = (result as u32).to_ne_bytes();
            write_memory(
                at + std::mem::offset_of!(libc::mmsghdr, msg_len) as u64,
                &length,
            );
            sent += 1;
        }
        sent
    }
}

/// How many messages after the first one `sendmmsg` sends at most (see
/// [`Job::send_unnamed_rest`]).
const MORE_MESSAGES: u64 = 63;

/// Writes `bytes` at `address` of this process (`process_vm_writev`: a bad address gives
/// an error, not a fault).
fn write_memory(address: u64, bytes: &[u8]) {
    // SAFETY: getpid has no preconditions.
    let own = unsafe { libc::getpid() };
    let local = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: the kernel reads `bytes` and checks the remote range.
    unsafe { libc::process_vm_writev(own, &local, 1, &remote, 1, 0) };
}

/// What an address is, for the checks.
enum Kind {
    /// A Unix socket's path (its bytes, without a NUL).
    UnixPath(usize),
    /// An abstract Unix socket's name (after its leading NUL).
    Abstract,
    /// An Internet address.
    Inet,
    /// Anything else (an unnamed Unix address, `AF_UNSPEC`, ...): made as asked.
    Other,
}

fn kind(address: &[u8]) -> Kind {
    if address.len() < 2 {
        return Kind::Other;
    }
    let family = i32::from(u16::from_ne_bytes([address[0], address[1]]));
    match family {
        libc::AF_UNIX if address.len() > 2 && address[2] == 0 => Kind::Abstract,
        libc::AF_UNIX if address.len() > 2 => {
            let path = &address[2..];
            Kind::UnixPath(path.iter().position(|b| *b == 0).unwrap_or(path.len()))
        }
        libc::AF_INET | libc::AF_INET6 => Kind::Inet,
        _ => Kind::Other,
    }
}

/// Whether the checked call `number` of another process (a program the plugin runs, whose
/// memory the supervisor cannot read) is refused: a socket call unless the grant has
/// `network: true` (its address cannot be checked); a metadata call is let through (Landlock
/// still holds that program's files).
pub fn refuse_other_process(number: i64, reach: &Reach) -> bool {
    SOCKET_CALLS.contains(&number) && !reach.network_all
}

/// Whether the thread `tid` of another process runs this process's own executable: a
/// copy the plugin forked, which has not run a program yet. Its checked calls are refused
/// whatever they are (they would run unchecked; between a fork and an `execve` none is
/// needed). Allocates nothing.
pub fn forked_copy(tid: u32, reach: &Reach) -> bool {
    let mut link = [0u8; 32];
    let prefix = b"/proc/";
    link[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let (mut n, mut count) = (tid, 0);
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, digit) in digits[..count].iter().rev().enumerate() {
        link[prefix.len() + i] = *digit;
    }
    link[prefix.len() + count..prefix.len() + count + 4].copy_from_slice(b"/exe");
    let mut exe = [0u8; PATH_MAX];
    // SAFETY: `link` is NUL-terminated (zeroed, at most 24 bytes written); readlink writes
    // at most PATH_MAX bytes into `exe`.
    let got = unsafe { libc::readlink(link.as_ptr().cast(), exe.as_mut_ptr().cast(), PATH_MAX) };
    // Unreadable (gone, or not ours to read): treated as a copy, refused.
    let Ok(len) = usize::try_from(got) else {
        return true;
    };
    !reach.exe.is_empty() && exe[..len] == reach.exe[..]
}

/// Names the refusal of a checked call in a copy the plugin forked ([`forked_copy`]).
pub fn name_forked_copy(link: &NamingLink, request: &libc::seccomp_notif) {
    let verb = match i64::from(request.data.nr) {
        libc::SYS_connect => CONNECT,
        libc::SYS_bind => BIND,
        libc::SYS_sendto => SENDTO,
        libc::SYS_sendmsg | libc::SYS_sendmmsg => SENDMSG,
        number => metadata()
            .find(|m| m.number == number)
            .map_or(CHMOD, |m| m.verb),
    };
    name(
        link,
        request,
        verb,
        Refusal::Address,
        b"a process it forked\0a process the plugin forked cannot have its calls checked (its memory is not the supervisor's), so it may connect, send, or change or watch files only once it runs a granted program",
        None,
    );
}

/// Names the refusal of another process's socket call.
pub fn name_other_process(link: &NamingLink, request: &libc::seccomp_notif) {
    let verb = match i64::from(request.data.nr) {
        libc::SYS_connect => CONNECT,
        libc::SYS_bind => BIND,
        libc::SYS_sendto => SENDTO,
        _ => SENDMSG,
    };
    name(
        link,
        request,
        verb,
        Refusal::Address,
        b"an address of a program it runs\0the sandbox cannot check a program's addresses (Unix sockets, host names), so its sockets need network: true",
        None,
    );
}

/// Reads the DNS query a send carries, when it goes to a resolver (a granted wildcard's
/// names are those the plugin asks about; see [`crate::sandbox::network`]).
fn note_dns(job: &Job) {
    let socket = job.args[0] as i32;
    let mut peer = [0u8; ADDRESS_MAX];
    let peer_len = if job.address_len > 0 {
        peer[..job.address_len as usize].copy_from_slice(&job.address[..job.address_len as usize]);
        job.address_len as usize
    } else {
        let mut len = ADDRESS_MAX as libc::socklen_t;
        // SAFETY: getpeername writes at most `len` bytes into `peer`, a local.
        if unsafe { libc::getpeername(socket, peer.as_mut_ptr().cast(), &mut len) } != 0 {
            return;
        }
        (len as usize).min(ADDRESS_MAX)
    };
    if !crate::sandbox::network::is_resolver(&peer[..peer_len]) {
        return;
    }
    let (at, len) = match job.number {
        libc::SYS_sendto => (job.args[1], job.args[2]),
        _ => {
            let header = job.message.msg_hdr;
            if header.msg_iovlen == 0 || header.msg_iov.is_null() {
                return;
            }
            // SAFETY: iovec is plain data; all-zero is a valid value.
            let mut first: libc::iovec = unsafe { std::mem::zeroed() };
            // SAFETY: the iovec's bytes are copied over a local of its type.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    (&mut first as *mut libc::iovec).cast::<u8>(),
                    std::mem::size_of::<libc::iovec>(),
                )
            };
            if read_memory(header.msg_iov as u64, bytes) != bytes.len() {
                return;
            }
            (first.iov_base as u64, first.iov_len as u64)
        }
    };
    let mut payload = [0u8; 512];
    let len = (len as usize).min(payload.len());
    let got = read_memory(at, &mut payload[..len]);
    let mut kind = 0i32;
    let mut kind_len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: getsockopt(SO_TYPE) writes an int into a local.
    unsafe {
        libc::getsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut i32).cast(),
            &mut kind_len,
        )
    };
    crate::sandbox::network::note_query(&payload[..got], kind == libc::SOCK_STREAM);
}

/// A socket call: its address copied, checked, and the call made from the copy.
fn socket_call(
    request: &libc::seccomp_notif,
    link: &NamingLink,
    reach: &Reach,
    response: &mut libc::seccomp_notif_resp,
) -> Answer {
    let args = request.data.args;
    let number = i64::from(request.data.nr);
    // SAFETY: mmsghdr is plain data; all-zero is a valid value.
    let message: libc::mmsghdr = unsafe { std::mem::zeroed() };
    let mut job = Job {
        id: request.id,
        number,
        args,
        address: [0; ADDRESS_MAX],
        address_len: 0,
        message,
        length_at: 0,
        handle: -1,
    };
    let (verb, at, len) = match number {
        libc::SYS_connect => (CONNECT, args[1], args[2]),
        libc::SYS_bind => (BIND, args[1], args[2]),
        libc::SYS_sendto => (SENDTO, args[4], args[5]),
        _ => {
            // SAFETY: the message's bytes are copied over a local of its type (plain data;
            // any bytes are a valid value).
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    (&mut job.message as *mut libc::mmsghdr).cast::<u8>(),
                    std::mem::size_of::<libc::mmsghdr>(),
                )
            };
            let wanted = if number == libc::SYS_sendmmsg {
                if args[2] == 0 {
                    response.val = 0;
                    return Answer::Respond;
                }
                job.length_at = args[1];
                bytes.len()
            } else {
                std::mem::size_of::<libc::msghdr>()
            };
            if read_memory(args[1], &mut bytes[..wanted]) != wanted {
                response.error = -libc::EFAULT;
                return Answer::Respond;
            }
            let header = job.message.msg_hdr;
            (
                SENDMSG,
                header.msg_name as u64,
                u64::from(header.msg_namelen),
            )
        }
    };
    if at != 0 && len != 0 {
        let len = (len as usize).min(ADDRESS_MAX);
        if read_memory(at, &mut job.address[..len]) != len {
            response.error = -libc::EFAULT;
            return Answer::Respond;
        }
        job.address_len = len as u32;
    }
    let address = &job.address[..job.address_len as usize];
    match kind(address) {
        Kind::UnixPath(path_len) if number != libc::SYS_bind => {
            let mut text = [0u8; PATH_MAX];
            text[..path_len].copy_from_slice(&address[2..2 + path_len]);
            let handle = match open_handle(libc::AT_FDCWD, &text[..=path_len], false) {
                Ok(handle) => handle,
                Err(error) => {
                    response.error = -error;
                    return Answer::Respond;
                }
            };
            let mut real = [0u8; PATH_MAX];
            let Some(real_len) = folder(handle.0, &mut real) else {
                response.error = -libc::EACCES;
                return Answer::Respond;
            };
            if !reach.within(&real[..real_len], true) {
                name(link, request, verb, Refusal::Write, &real[..real_len], None);
                response.error = -libc::EACCES;
                return Answer::Respond;
            }
            let mut through = [0u8; 32];
            let through_len = proc_path(handle.0, &mut through);
            job.address = [0; ADDRESS_MAX];
            job.address[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
            job.address[2..2 + through_len].copy_from_slice(&through[..through_len]);
            job.address_len = (2 + through_len + 1) as u32;
            job.handle = handle.release();
        }
        Kind::Abstract if !reach.network_all => {
            let name_bytes = &address[3..];
            let end = name_bytes.len();
            name(
                link,
                request,
                verb,
                Refusal::Abstract,
                &name_bytes[..end],
                None,
            );
            response.error = -libc::EPERM;
            return Answer::Respond;
        }
        // A local address to bind is not a destination (a TCP port is refused by Landlock
        // under a host list, named in `bind`).
        Kind::Inet if reach.network_hosts && number != libc::SYS_bind => {
            let mut why = [0u8; 256];
            if let Err(why_len) = crate::sandbox::network::check(address, &mut why) {
                let mut text = [0u8; 512];
                let shown = crate::sandbox::network::show(address, &mut text);
                text[shown] = 0;
                let why_len = why_len.min(text.len() - shown - 1);
                text[shown + 1..shown + 1 + why_len].copy_from_slice(&why[..why_len]);
                name(
                    link,
                    request,
                    verb,
                    Refusal::Address,
                    &text[..shown + 1 + why_len],
                    None,
                );
                response.error = -libc::EACCES;
                return Answer::Respond;
            }
        }
        _ => {}
    }
    if number == libc::SYS_bind {
        return bind(job, link, request, response, reach);
    }
    if number != libc::SYS_connect && reach.network_hosts && crate::sandbox::network::wildcards() {
        note_dns(&job);
    }
    let socket = args[0] as i32;
    // SAFETY: F_GETFL of a descriptor number: at worst EBADF.
    let blocking = unsafe { libc::fcntl(socket, libc::F_GETFL) } & libc::O_NONBLOCK == 0;
    let flags_arg = match number {
        libc::SYS_sendto => Some(3),
        libc::SYS_sendmsg => Some(2),
        libc::SYS_sendmmsg => Some(3),
        _ => None,
    };
    if let Some(f) = flags_arg {
        let waits = blocking && job.args[f] & libc::MSG_DONTWAIT as u64 == 0;
        if waits {
            // Without waiting first; only a send that would block is handed on.
            let mut first = job;
            first.args[f] |= libc::MSG_DONTWAIT as u64;
            first.handle = -1;
            match first.make() {
                Err(libc::EAGAIN) => {}
                result => {
                    respond(response, result);
                    if job.handle >= 0 {
                        // SAFETY: the handle was opened for this call alone.
                        unsafe { libc::close(job.handle) };
                    }
                    return Answer::Respond;
                }
            }
        } else {
            respond(response, job.make());
            return Answer::Respond;
        }
    } else if !blocking {
        respond(response, job.make());
        return Answer::Respond;
    }
    if hand_to_performer(&job) {
        return Answer::Handed;
    }
    respond(response, job.make());
    Answer::Respond
}

/// `bind`: made from the copy; Landlock refuses a socket file outside the write grant
/// (`MAKE_SOCK`), named here.
fn bind(
    mut job: Job,
    link: &NamingLink,
    request: &libc::seccomp_notif,
    response: &mut libc::seccomp_notif_resp,
    reach: &Reach,
) -> Answer {
    let result = job.make();
    if result == Err(libc::EACCES)
        && reach.network_hosts
        && matches!(kind(&job.address[..job.address_len as usize]), Kind::Inet)
    {
        let mut text = [0u8; 256];
        let shown = crate::sandbox::network::show(
            &job.address[..job.address_len as usize],
            &mut text[..128],
        );
        let why = b"a list of hosts grants connecting to them, not listening on a TCP port";
        text[shown] = 0;
        text[shown + 1..shown + 1 + why.len()].copy_from_slice(why);
        name(
            link,
            request,
            BIND,
            Refusal::Address,
            &text[..shown + 1 + why.len()],
            None,
        );
    }
    if result == Err(libc::EACCES)
        && let Kind::UnixPath(path_len) = kind(&job.address[..job.address_len as usize])
    {
        let text = &job.address[2..2 + path_len];
        let mut base = [0u8; PATH_MAX];
        let base_len = if text.first() == Some(&b'/') {
            None
        } else {
            folder(libc::AT_FDCWD, &mut base)
        };
        name(
            link,
            request,
            BIND,
            Refusal::Write,
            text,
            base_len.map(|l| &base[..l]),
        );
    }
    respond(response, result);
    Answer::Respond
}

fn respond(response: &mut libc::seccomp_notif_resp, result: Result<i64, i32>) {
    match result {
        Ok(value) => response.val = value,
        Err(error) => response.error = -error,
    }
}

/// A thread that makes calls that may block, and answers them.
struct Performer {
    busy: AtomicBool,
    /// The write end of its jobs' pipe (-1: not started).
    jobs: AtomicI32,
}

static PERFORMERS: [Performer; 2] = [const {
    Performer {
        busy: AtomicBool::new(false),
        jobs: AtomicI32::new(-1),
    }
}; 2];

/// Starts the performer threads (before the notifying filter is installed: their own calls
/// are not notified).
pub fn start_performers() -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    for performer in &PERFORMERS {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let read = read.into_raw_fd();
        std::thread::Builder::new()
            .name("pi-hooks-sandbox-performer".into())
            .stack_size(128 << 10)
            .spawn(move || {
                super::block_signals();
                perform_jobs(read, performer)
            })?;
        performer.jobs.store(write.into_raw_fd(), Ordering::Release);
    }
    Ok(())
}

/// Hands `job` to a free performer; `false`: none is free.
fn hand_to_performer(job: &Job) -> bool {
    for performer in &PERFORMERS {
        let fd = performer.jobs.load(Ordering::Acquire);
        if fd < 0
            || performer
                .busy
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            continue;
        }
        let size = std::mem::size_of::<Job>();
        // SAFETY: write(2) of the job's bytes (plain data), under PIPE_BUF: atomic.
        let wrote = unsafe { libc::write(fd, (job as *const Job).cast(), size) };
        if wrote == size as isize {
            return true;
        }
        performer.busy.store(false, Ordering::Release);
    }
    false
}

/// A performer's loop: makes each job's call and answers it.
fn perform_jobs(read: RawFd, performer: &Performer) {
    let size = std::mem::size_of::<Job>();
    loop {
        // SAFETY: Job is plain data (integers and byte arrays): any bytes are a valid value.
        let mut job: Job = unsafe { std::mem::zeroed() };
        // SAFETY: read(2) into the job's own bytes; the supervisor writes whole jobs.
        let got = unsafe { libc::read(read, (&mut job as *mut Job).cast(), size) };
        if got != size as isize {
            if got < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        let result = job.make();
        let mut response = libc::seccomp_notif_resp {
            id: job.id,
            val: 0,
            error: 0,
            flags: 0,
        };
        respond(&mut response, result);
        let listener = LISTENER.load(Ordering::Acquire);
        // SAFETY: SEND reads the seccomp_notif_resp passed, a local of the right type.
        unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
        performer.busy.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_addresses_apart() {
        let mut unix = [0u8; 20];
        unix[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        unix[2..7].copy_from_slice(b"/tmp/");
        assert!(matches!(kind(&unix[..7]), Kind::UnixPath(5)));
        assert!(matches!(kind(&unix), Kind::UnixPath(5)));
        unix[2] = 0;
        assert!(matches!(kind(&unix), Kind::Abstract));
        assert!(matches!(kind(&unix[..2]), Kind::Other));
        let inet = (libc::AF_INET as u16).to_ne_bytes();
        assert!(matches!(kind(&[inet[0], inet[1], 0, 80]), Kind::Inet));
    }

    #[test]
    fn checks_real_paths_beneath_the_roots() {
        let reach = Reach {
            read: vec![b"/r".to_vec()],
            write: vec![b"/w/x".to_vec()],
            own: b"/proc/7".to_vec(),
            exe: Vec::new(),
            network_all: false,
            network_hosts: false,
        };
        assert!(reach.within(b"/r/a", false));
        assert!(!reach.within(b"/r/a", true));
        assert!(reach.within(b"/w/x", true));
        assert!(reach.within(b"/w/x/y", true));
        assert!(!reach.within(b"/w/xy", true));
        // Looks: the folders on the way to the grant and the process's own files too.
        for seen in [
            &b"/"[..],
            b"/w",
            b"/w/x/y",
            b"/r",
            b"/proc/7",
            b"/proc/7/status",
            b"/proc",
        ] {
            assert!(reach.visible(seen), "{}", String::from_utf8_lossy(seen));
        }
        for hidden in [
            &b"/w/y"[..],
            b"/etc",
            b"/proc/70",
            b"/proc/8/environ",
            b"/rr",
        ] {
            assert!(
                !reach.visible(hidden),
                "{}",
                String::from_utf8_lossy(hidden)
            );
        }
        let mut buffer = [0u8; 32];
        let len = proc_path(17, &mut buffer);
        assert_eq!(&buffer[..=len], b"/proc/self/fd/17\0");
    }
}
