//! Naming a refusal, on a thread of its own ([`start_naming`]): the supervisor passes it the
//! call ([`NamingLink::ask`]) with what the call named, captured while it waited
//! (`super::captured`); it resolves the paths, checks them against the grant and reports the
//! refusal (or decides an `execve`), however late it comes to it. When no capture slot was
//! free, it reads the paths from the process's memory itself, and names the refusal only if
//! the call still waits (what it read was that call's); one it cannot name so is counted
//! and said on stderr (`say_unnamed`). It also
//! names the limits the supervisor met ([`NamingLink::name_limit`]: an allocation past
//! `memoryMiB`, a process past the bound on processes) without allocating, since the
//! refused thread may hold the memory allocator's locks.

use std::fmt::Write as _;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::calls::{Access, OpenFlags, call};
use super::captured::{Captured, PATH_MAX, POOL, SLOTS, Slot};
use super::memory::Size;
use super::{LISTENER, NAMING_WAIT, block_signals};
use crate::sandbox::Grant;

/// Refusals found with every capture slot taken (named the old way, from the call's memory).
pub static NO_SLOT: AtomicU64 = AtomicU64::new(0);

/// Refusals that went unnamed: the naming thread came to one (without its capture) after its
/// call was answered, or could not be passed one at all (its queue was full).
static UNNAMED: AtomicU64 = AtomicU64::new(0);

/// Says on stderr that a refusal went unnamed, and why.
fn say_unnamed(why: &str) {
    let count = UNNAMED.fetch_add(1, Ordering::Relaxed) + 1;
    eprintln!(
        "pi-hooks: sandbox: a refusal went unnamed ({why}; {count} so far, {} found no capture slot free)",
        NO_SLOT.load(Ordering::Relaxed)
    );
}

/// What the naming thread says of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answer as planned (a refusal was reported, or there was nothing to report).
    Proceed,
    /// Refuse it (`execve` of a program the grant does not name; it was reported).
    Refuse,
}

/// One call passed to the naming thread: id, number, six arguments, the capture slot's index
/// ([`NO_CAPTURE`] without one).
const JOB_WORDS: usize = 9;

/// A job's slot index when nothing was captured.
const NO_CAPTURE: u64 = u64::MAX;

/// A limit the supervisor met, passed as a job whose "number" is negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// An allocation of this many bytes past `memoryMiB`.
    Memory(u64),
    /// A new process past the bound on processes.
    Processes,
}

impl Limit {
    /// As a job's number and first argument.
    fn encode(self) -> (i64, u64) {
        match self {
            Limit::Memory(size) => (-1, size),
            Limit::Processes => (-2, 0),
        }
    }

    fn decode(number: i64, argument: u64) -> Option<Limit> {
        match number {
            -1 => Some(Limit::Memory(argument)),
            -2 => Some(Limit::Processes),
            _ => None,
        }
    }
}

/// The number of a job naming a refusal the supervisor decided itself (`super::checked`):
/// its first argument is the verb's index in [`super::checked::VERBS`], its second the
/// [`Refusal`], and what it names is in the capture slot.
const REFUSED: i64 = -3;

/// What a refusal decided by the supervisor (`super::checked`) is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A path outside what the plugin may read.
    Read,
    /// A path outside what the plugin may write.
    Write,
    /// An abstract Unix socket (`@name`) without the network.
    Abstract,
    /// A network address (`host:port`) the grant's hosts do not cover; the slot's text is
    /// the address, then after a NUL why (see [`crate::sandbox::network`]).
    Address,
}

impl Refusal {
    fn code(self) -> u64 {
        match self {
            Refusal::Read => 0,
            Refusal::Write => 1,
            Refusal::Abstract => 2,
            Refusal::Address => 3,
        }
    }

    fn decode(code: u64) -> Option<Refusal> {
        [
            Refusal::Read,
            Refusal::Write,
            Refusal::Abstract,
            Refusal::Address,
        ]
        .into_iter()
        .find(|r| r.code() == code)
    }
}

/// One answer of the naming thread: id and verdict.
const VERDICT_BYTES: usize = 16;

/// The supervisor's end of the pipes to the naming thread.
pub struct NamingLink {
    /// Write end, non-blocking: a stuck naming thread never stalls the supervisor.
    jobs: OwnedFd,
    /// Read end of the verdicts.
    verdicts: OwnedFd,
}

impl NamingLink {
    /// Passes a call to the naming thread, with what it named (`captured`; without, the
    /// naming thread reads it from memory, if the call still waits), and waits at most
    /// [`NAMING_WAIT`] for its verdict; without one, [`Verdict::Proceed`] (a refusal is still
    /// named, later).
    pub fn ask(
        &self,
        request: &libc::seccomp_notif,
        captured: Option<Slot<'static, SLOTS>>,
    ) -> Verdict {
        let slot = captured.map_or(NO_CAPTURE, |slot| slot.hand() as u64);
        let words = [
            request.id,
            i64::from(request.data.nr) as u64,
            request.data.args[0],
            request.data.args[1],
            request.data.args[2],
            request.data.args[3],
            request.data.args[4],
            request.data.args[5],
            slot,
        ];
        self.send_job(words, NAMING_WAIT)
    }

    /// Has the naming thread name `limit`, met by the call `id`, and waits at most
    /// [`LIMIT_WAIT`] for it to be sent: long enough that a plugin that gives up at once
    /// (`abort()` when an allocation fails, as Rust's allocator does) is reported with its
    /// refusal, short enough that nothing stalls long when the naming thread is held up.
    /// What it does for a limit allocates nothing (but where the protocol's writer must
    /// grow its buffer), so the allocator's lock the refused thread holds does not hold it.
    pub fn name_limit(&self, id: u64, limit: Limit) {
        let (number, argument) = limit.encode();
        let job = [id, number as u64, argument, 0, 0, 0, 0, 0, NO_CAPTURE];
        self.send_job(job, LIMIT_WAIT);
    }

    /// Has the naming thread report the refusal `refusal` of the call of `request` (its verb:
    /// `verb`, an index in [`super::checked::VERBS`]), decided by the supervisor, with what
    /// it names in `slot`; waits at most [`NAMING_WAIT`] for it to be sent.
    pub fn refused(
        &self,
        request: &libc::seccomp_notif,
        verb: usize,
        refusal: Refusal,
        slot: Slot<'static, SLOTS>,
    ) {
        let index = slot.hand() as u64;
        let job = [
            request.id,
            REFUSED as u64,
            verb as u64,
            refusal.code(),
            0,
            0,
            0,
            0,
            index,
        ];
        self.send_job(job, NAMING_WAIT);
    }

    /// Writes one job and waits at most `wait` for its answer.
    fn send_job(&self, words: [u64; JOB_WORDS], wait: std::time::Duration) -> Verdict {
        let request_id = words[0];
        let mut job = [0u8; JOB_WORDS * 8];
        for (slot, word) in job.chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&word.to_ne_bytes());
        }
        // SAFETY: write(2) of a local buffer; a pipe write under PIPE_BUF is atomic.
        let wrote = unsafe { libc::write(self.jobs.as_raw_fd(), job.as_ptr().cast(), job.len()) };
        if wrote != job.len() as isize {
            // The naming thread never saw it: the slot is the supervisor's again (freed).
            if let Ok(index) = usize::try_from(words[8]) {
                drop(POOL.take(index));
            }
            // Counted only: saying it here could allocate.
            UNNAMED.fetch_add(1, Ordering::Relaxed);
            return Verdict::Proceed;
        }
        let deadline = Instant::now() + wait;
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
            if u64::from_ne_bytes(id) == request_id {
                return if answer[8] == 1 {
                    Verdict::Refuse
                } else {
                    Verdict::Proceed
                };
            }
        }
    }
}

/// How long the supervisor waits for a limit to be named (see [`NamingLink::name_limit`]).
const LIMIT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// What the naming thread knows.
pub struct Namer {
    /// The grant, for the reports' words.
    pub grant: Grant,
    /// The grant's words, ready to be sent without allocating.
    pub prepared: crate::sandbox::report::Prepared,
    /// The grant with what the sandbox also lets the child reach: a refusal of a path in it
    /// is not the grant's doing.
    pub reach: Grant,
}

/// Starts the naming thread.
pub fn start_naming(namer: Namer) -> std::io::Result<NamingLink> {
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
                let captured = usize::try_from(words[8]).ok().and_then(|i| POOL.take(i));
                let verdict = match Limit::decode(words[1] as i64, args[0]) {
                    _ if words[1] as i64 == REFUSED => {
                        if let Some(slot) = captured {
                            namer.name_refused(args[0], args[1], &slot);
                        }
                        Verdict::Proceed
                    }
                    Some(limit) => {
                        namer.name_limit(limit);
                        Verdict::Proceed
                    }
                    // The slot is freed at the arm's end, before the verdict is written.
                    None => match captured {
                        Some(slot) => namer.name_captured(words[0], words[1] as i64, &slot),
                        None => namer.name(words[0], words[1] as i64, &args),
                    },
                };
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
    /// Reports `limit`, without allocating where it can (the words on the stack, the line
    /// written from there); when the refusals' lock is held or the protocol is not up yet,
    /// as any refusal.
    fn name_limit(&self, limit: Limit) {
        let mut reason = StackText::default();
        let action = match limit {
            Limit::Memory(size) => {
                let _ = write!(
                    reason,
                    "allocation of {} refused: past the memory its grant allows (memoryMiB {}; the child's own needs are counted besides)",
                    Size(size),
                    self.grant.memory_mib.unwrap_or(0)
                );
                "memory"
            }
            Limit::Processes => {
                let _ = match crate::sandbox::cgroup::tasks_bound() {
                    Some(tasks) => write!(
                        reason,
                        "fork refused: its sandbox allows at most {tasks} threads and processes at once (exec: "
                    ),
                    None => write!(
                        reason,
                        "fork refused: its grant allows at most {} processes beyond what your user runs (exec: ",
                        crate::sandbox::limits::EXTRA_PROCESSES
                    ),
                };
                for (i, program) in self.grant.exec.iter().enumerate() {
                    let _ = write!(reason, "{}{program}", if i > 0 { ", " } else { "" });
                }
                let _ = write!(reason, ")");
                "fork"
            }
        };
        if !self
            .prepared
            .denied_without_allocating(action, reason.as_str())
        {
            crate::sandbox::report::denied(action, reason.as_str(), &self.grant);
        }
    }

    /// Reports a refusal the supervisor decided itself (`super::checked`): `verb` and
    /// `refusal` as [`NamingLink::refused`] encoded them, what it names in `slot`.
    fn name_refused(&self, verb: u64, refusal: u64, slot: &Slot<'static, SLOTS>) {
        use std::os::unix::ffi::OsStrExt;
        let Some(verb) = super::checked::VERBS.get(verb as usize).copied() else {
            return;
        };
        let Some(path) = slot.captured().paths().first() else {
            return;
        };
        let text = path.text();
        let grant = &self.grant;
        match Refusal::decode(refusal) {
            Some(kind @ (Refusal::Read | Refusal::Write)) => {
                let given = Path::new(std::ffi::OsStr::from_bytes(text));
                let base = path
                    .base()
                    .map(|b| Path::new(std::ffi::OsStr::from_bytes(b)));
                let resolved = resolve_against(base, given).unwrap_or_else(|| given.to_path_buf());
                let write = kind == Refusal::Write;
                if let Err(reason) = crate::sandbox::check_path(grant, verb, &resolved, write) {
                    crate::sandbox::report::denied(verb, &reason, grant);
                } else {
                    // In the grant, but not as the file the call reached (a link out of it).
                    let reason = format!(
                        "{verb} of {} denied: it leads out of what the grant of plugin {} ({}) lets it {}",
                        resolved.display(),
                        grant.plugin,
                        grant.source,
                        if write { "write" } else { "read" }
                    );
                    crate::sandbox::report::denied(verb, &reason, grant);
                }
            }
            Some(Refusal::Abstract) => {
                let name = String::from_utf8_lossy(text).into_owned();
                let name = crate::guards::display::escape(&name);
                let reason = format!(
                    "{verb} to the abstract Unix socket @{name} denied: the grant of plugin {} ({}) does not include the network (an abstract socket is reached by name from anywhere on the machine); to allow it, grant \"network\": true",
                    grant.plugin, grant.source
                );
                crate::sandbox::report::denied(verb, &reason, grant);
            }
            Some(Refusal::Address) => {
                let mut parts = text.splitn(2, |b| *b == 0);
                let address = String::from_utf8_lossy(parts.next().unwrap_or_default());
                let why = String::from_utf8_lossy(parts.next().unwrap_or_default());
                let reason = format!(
                    "{verb} to {address} denied: {why}; the grant of plugin {} ({}) allows network: {}",
                    grant.plugin,
                    grant.source,
                    grant.network.describe()
                );
                crate::sandbox::report::denied(verb, &reason, grant);
            }
            None => {}
        }
    }

    /// Names the refusal of the call `id`, `number`, from what the supervisor captured
    /// while it waited (or decides an `execve`), reporting it when the grant explains it.
    /// The call may have been answered meanwhile: what was captured was still its.
    fn name_captured(&self, id: u64, number: i64, slot: &Slot<'static, SLOTS>) -> Verdict {
        use std::os::unix::ffi::OsStrExt;
        let Some(call) = call(number) else {
            return Verdict::Proceed;
        };
        let captured: &Captured = slot.captured();
        let mut paths = Vec::new();
        let mut by_descriptor = false;
        for path in captured.paths() {
            let text = Path::new(std::ffi::OsStr::from_bytes(path.text()));
            by_descriptor |= text.as_os_str().is_empty();
            let base = path
                .base()
                .map(|b| Path::new(std::ffi::OsStr::from_bytes(b)));
            let Some(resolved) = resolve_against(base, text) else {
                // A relative path whose folder could not be read: named as given.
                paths.push(text.to_path_buf());
                continue;
            };
            paths.push(resolved);
        }
        let flags = match call.access {
            Access::Open(_) => captured.flags(),
            _ => Some(0),
        };
        let Some(flags) = flags else {
            say_unnamed("the flags of an openat2 could not be read");
            return Verdict::Proceed;
        };
        self.judge(call.access, &paths, by_descriptor, flags, Some(id))
    }

    /// Names the refusal of the call `id`, `number` with `args` (or decides an `execve`),
    /// reading its paths from memory now (no capture slot was free), reporting it when the
    /// grant explains it and the call still waits.
    fn name(&self, id: u64, number: i64, args: &[u64; 6]) -> Verdict {
        let Some(call) = call(number) else {
            return Verdict::Proceed;
        };
        let mut paths = Vec::new();
        // An empty path names the descriptor itself (AT_EMPTY_PATH: fexecve and its kin).
        let mut by_descriptor = false;
        for (dir, path) in call.paths {
            let Some(text) = read_path(args[*path]) else {
                if still_waiting(id) {
                    say_unnamed("its path could not be read");
                }
                return Verdict::Proceed;
            };
            by_descriptor |= text.as_os_str().is_empty();
            let dir = dir.map(|d| args[d] as i32).unwrap_or(libc::AT_FDCWD);
            let Some(resolved) = resolve(dir, &text) else {
                if still_waiting(id) {
                    say_unnamed("the folder its path is relative to could not be read");
                }
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
        if !still_waiting(id) {
            say_unnamed("its call was answered before the naming thread could read it");
            return Verdict::Proceed;
        }
        let Some(flags) = flags else {
            say_unnamed("the flags of an openat2 could not be read");
            return Verdict::Proceed;
        };
        self.judge(call.access, &paths, by_descriptor, flags, None)
    }

    /// Reports the refusal of a call asking for `access` to `paths` (`flags`: an open's),
    /// or decides an `execve`. `late_check`: the call's id, to tell whether an `execve`
    /// refused here was already let through (the supervisor waited no longer).
    fn judge(
        &self,
        access: Access,
        paths: &[PathBuf],
        by_descriptor: bool,
        flags: i32,
        late_check: Option<u64>,
    ) -> Verdict {
        match access {
            Access::Exec => self.name_exec(&paths[0], by_descriptor, late_check),
            Access::Open(_) => {
                let write = flags & libc::O_ACCMODE != libc::O_RDONLY
                    || flags & (libc::O_CREAT | libc::O_TRUNC) != 0;
                self.name_change(if write { "write" } else { "read" }, paths, write);
                Verdict::Proceed
            }
            Access::Change(verb) => {
                self.name_change(verb, paths, true);
                Verdict::Proceed
            }
        }
    }

    /// A program the grant does not name is refused and reported; a path where nothing is
    /// is left to the kernel (`ENOENT`). A program run from a descriptor is refused unless
    /// that descriptor's file is a granted one (a `memfd`, which Landlock lets run, is not).
    /// `late_check`: the call's id; if it no longer waits, the supervisor let it through
    /// before this verdict, and the report says so.
    fn name_exec(&self, program: &Path, by_descriptor: bool, late_check: Option<u64>) -> Verdict {
        let missing = !by_descriptor && std::fs::metadata(program).is_err();
        if missing || self.grant.allows_program(program) {
            return Verdict::Proceed;
        }
        let mut reason = crate::sandbox::exec_refusal(&program.display().to_string(), &self.grant);
        if late_check.is_some_and(|id| !still_waiting(id)) {
            reason.push_str(" (decided too late to stop it: the call went ahead)");
        }
        crate::sandbox::report::denied("execve", &reason, &self.grant);
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
        if let Err(reason) = crate::sandbox::check_path(&self.grant, verb, outside, write) {
            crate::sandbox::report::denied(verb, &reason, &self.grant);
        }
    }
}

/// Text written on the stack (cut at its capacity, on a character boundary).
pub struct StackText {
    bytes: [u8; 1024],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; 1024],
            len: 0,
        }
    }
}

impl StackText {
    /// What was written.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let room = self.bytes.len() - self.len;
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
pub fn read_memory(address: u64, buffer: &mut [u8]) -> usize {
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

/// Whether the notified call `id` still waits for its answer.
fn still_waiting(id: u64) -> bool {
    let listener = LISTENER.load(Ordering::Acquire);
    // SAFETY: ID_VALID reads the u64 passed, a local.
    listener >= 0 && unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) } == 0
}

/// `path` made absolute against `base` (the folder it is relative to, captured; `None` for
/// a relative path: unknown). An empty path names `base` itself. `.` and `..` are taken out.
fn resolve_against(base: Option<&Path>, path: &Path) -> Option<PathBuf> {
    if path.is_absolute() {
        return Some(crate::sandbox::grant::normalize(path));
    }
    let base = base?;
    if path.as_os_str().is_empty() {
        return Some(base.to_path_buf());
    }
    Some(crate::sandbox::grant::normalize(&base.join(path)))
}

/// `path` made absolute against the folder descriptor `dir` (`AT_FDCWD`: the working
/// directory); an empty path names `dir` itself (`AT_EMPTY_PATH`). `.` and `..` are taken out.
fn resolve(dir: i32, path: &Path) -> Option<PathBuf> {
    if path.is_absolute() {
        return Some(crate::sandbox::grant::normalize(path));
    }
    let base = if dir == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else {
        std::fs::read_link(format!("/proc/self/fd/{dir}")).ok()?
    };
    if path.as_os_str().is_empty() {
        return Some(base);
    }
    Some(crate::sandbox::grant::normalize(&base.join(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A notification of the call `number` with `args`, as RECV fills it.
    fn request(id: u64, number: i64, args: [u64; 6]) -> libc::seccomp_notif {
        // SAFETY: seccomp_notif is plain data; all-zero is a valid value.
        let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        request.id = id;
        request.data.nr = number as i32;
        request.data.args = args;
        request
    }

    /// Waits (up to 10 s) for a reported refusal whose reason holds `words`.
    fn reported(words: &str) -> Option<String> {
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(reason) = crate::sandbox::report::pending_reasons()
                .into_iter()
                .find(|r| r.contains(words))
            {
                return Some(reason);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }

    /// The naming thread comes to a refusal after its call was answered (here: no call
    /// waits at all, no listener), its memory reused: from what was captured, it is still
    /// named; without a capture it cannot be, and says so.
    #[test]
    fn a_refusal_captured_is_named_however_late_and_an_execve_too() {
        let grant = Grant {
            plugin: "late".into(),
            source: "test".into(),
            read: vec!["/usr".into()],
            write: Vec::new(),
            network: crate::packages::manifest::Network::None,
            exec: vec!["git".into()],
            exec_paths: Vec::new(),
            memory_mib: None,
            data: PathBuf::new(),
        };
        let link = start_naming(Namer {
            grant: grant.clone(),
            prepared: crate::sandbox::report::Prepared::new(&grant),
            reach: grant.clone(),
        })
        .unwrap();
        let open = call(libc::SYS_openat).unwrap();
        let mut path = b"late-named/secret\0".to_vec();
        let args = [
            libc::AT_FDCWD as u64,
            path.as_ptr() as u64,
            libc::O_RDONLY as u64,
            0,
            0,
            0,
        ];
        let mut slot = POOL.claim().unwrap();
        assert!(super::super::captured::capture(&mut slot, open, &args));
        // The call's memory changes before the naming thread reads it.
        path.fill(b'x');
        let asked = request(1, libc::SYS_openat, args);
        assert_eq!(link.ask(&asked, Some(slot)), Verdict::Proceed);
        let cwd = std::env::current_dir().unwrap();
        let reason = reported("late-named/secret").expect("the refusal was not named");
        assert!(
            reason.starts_with(&format!(
                "read of {}/late-named/secret denied",
                cwd.display()
            )),
            "{reason}"
        );
        // Every slot is free again (the naming thread frees it right after the report).
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let all: Vec<_> = (0..SLOTS).map_while(|_| POOL.claim()).collect();
            if all.len() == SLOTS {
                break;
            }
            assert!(Instant::now() < deadline, "a slot was not freed");
            drop(all);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }

        // Without a capture, the call must still wait: it does not, so nothing is named.
        let before = UNNAMED.load(Ordering::Relaxed);
        let uncaptured = b"/uncaptured/secret\0";
        let args = [
            libc::AT_FDCWD as u64,
            uncaptured.as_ptr() as u64,
            0,
            0,
            0,
            0,
        ];
        assert_eq!(
            link.ask(&request(2, libc::SYS_openat, args), None),
            Verdict::Proceed
        );
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while UNNAMED.load(Ordering::Relaxed) == before && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(UNNAMED.load(Ordering::Relaxed) > before);
        assert!(
            !crate::sandbox::report::pending_reasons()
                .iter()
                .any(|r| r.contains("/uncaptured/secret"))
        );

        // An execve decided after its call went ahead is refused and says so.
        let exec = call(libc::SYS_execve).unwrap();
        let program = b"/bin/sh\0";
        let args = [program.as_ptr() as u64, 0, 0, 0, 0, 0];
        let mut slot = POOL.claim().unwrap();
        assert!(super::super::captured::capture(&mut slot, exec, &args));
        let asked = Instant::now();
        let verdict = link.ask(&request(3, libc::SYS_execve, args), Some(slot));
        // Refused, unless the naming thread took longer than the supervisor waits (a loaded
        // machine): then it went ahead, and is reported all the same.
        if asked.elapsed() < NAMING_WAIT {
            assert_eq!(verdict, Verdict::Refuse);
        }
        let reason = reported("exec of \"/bin/sh\"").unwrap();
        assert!(
            reason.ends_with(
                "(exec: git); to allow it, grant \"exec\": [\"/bin/sh\"] (decided too late to stop it: the call went ahead)"
            ),
            "{reason}"
        );
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
