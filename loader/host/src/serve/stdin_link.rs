//! Serve's stdin read by whoever waits for it (Unix): the worker reads its next request from
//! stdin itself, and a plugin call waiting for the client's `response` reads it itself, as
//! with the ring transport ([`super::ring_link`]). A request used to be read by serve's main
//! thread and handed to the worker through a channel: one thread wake-up more per request,
//! a third of a round trip on a machine whose wake-ups are slow (BENCHMARKS.md §8).
//!
//! The first of the waiting threads takes the reading turn, and what it reads for another
//! goes to that one (a condition variable), so a reader is always there while anyone waits
//! (a timer's request answered while the worker runs a call that waits on the same plugin).
//! While nobody waits, nothing reads: the client's lines wait in the pipe. The framing is
//! [`super::framing`]'s: lines split on `\n`, a trailing `\r` dropped, blank lines skipped,
//! bytes that are not UTF-8 replaced, a line over [`MAX_LINE_BYTES`] dropped and answered
//! with an error line.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::os::fd::AsFd;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::framing::{MAX_LINE_BYTES, parse_error_message};
use super::{LineWriter, error_line};

/// Why a wait ended without what it waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Stdin has closed (the client has gone), or the ring was closed.
    Closed,
    /// The wait's time limit passed.
    TimedOut,
}

/// What the readers share.
#[derive(Default)]
struct Inbound {
    /// A thread reads stdin now.
    reading: bool,
    /// Threads waiting on the condition variable.
    waiters: usize,
    /// Requests from the client, in order.
    jobs: VecDeque<Value>,
    /// Responses awaited by request id; `Some` once arrived.
    awaited: HashMap<String, Option<Result<Value, String>>>,
    closed: bool,
}

/// Stdin's bytes not yet taken as lines.
struct Lines {
    buffer: Vec<u8>,
    /// Where the unread bytes start in `buffer`.
    start: usize,
    /// The length so far of a line longer than the limit, being read through and dropped.
    dropping: Option<usize>,
    ended: bool,
}

/// One thing read from stdin.
enum Read1 {
    Line(String),
    TooLong(usize),
    End,
    TimedOut,
}

impl Lines {
    /// The next non-blank line, reading stdin (at most until `deadline`) when no whole line
    /// is buffered.
    fn next(&mut self, deadline: Option<Instant>) -> Read1 {
        loop {
            let unread = &self.buffer[self.start..];
            if let Some(at) = unread.iter().position(|&b| b == b'\n') {
                let end = self.start + at;
                let line = &self.buffer[self.start..end];
                self.start = end + 1;
                if let Some(dropped) = self.dropping.take() {
                    return Read1::TooLong(dropped + line.len());
                }
                if let Some(read) = text_of(line) {
                    return read;
                }
                continue;
            }
            // No whole line: keep what is unread at the buffer's start.
            self.buffer.drain(..self.start);
            self.start = 0;
            if self.buffer.len() > MAX_LINE_BYTES {
                *self.dropping.get_or_insert(0) += self.buffer.len();
                self.buffer.clear();
            }
            if self.ended {
                let rest = std::mem::take(&mut self.buffer);
                if let Some(dropped) = self.dropping.take() {
                    return Read1::TooLong(dropped + rest.len());
                }
                if let Some(read) = text_of(&rest) {
                    return read;
                }
                return Read1::End;
            }
            if let Some(deadline) = deadline
                && !readable_before(deadline)
            {
                return Read1::TimedOut;
            }
            let len = self.buffer.len();
            self.buffer.resize(len + READ_SIZE, 0);
            // Reads larger than Stdin's own buffer bypass it: nothing is kept there that
            // `poll` would not see.
            match std::io::stdin().lock().read(&mut self.buffer[len..]) {
                Ok(0) => {
                    self.buffer.truncate(len);
                    self.ended = true;
                }
                Ok(n) => self.buffer.truncate(len + n),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
                    self.buffer.truncate(len)
                }
                Err(_) => {
                    self.buffer.truncate(len);
                    self.ended = true;
                }
            }
        }
    }
}

/// How much one `read` of stdin asks for (more than `Stdin`'s own 8 KiB buffer).
const READ_SIZE: usize = 64 * 1024;

/// A line's text (`\r` dropped, not UTF-8 replaced); `None` for a blank line.
fn text_of(line: &[u8]) -> Option<Read1> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    (!text.trim().is_empty()).then(|| Read1::Line(text.into_owned()))
}

/// Whether stdin has something to read (or has closed) before `deadline`.
fn readable_before(deadline: Instant) -> bool {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: left.subsec_nanos().into(),
        };
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(rustix::io::Errno::INTR) => continue,
            // A descriptor poll cannot wait on: the read says what there is.
            Err(_) => return true,
        }
    }
}

/// Serve's stdin, read by its waiters.
pub struct StdinLink {
    out: LineWriter,
    lines: Mutex<Lines>,
    inbound: Mutex<Inbound>,
    changed: Condvar,
}

impl StdinLink {
    /// Stdin's link; lines that are not requests or responses are answered on `out`.
    pub fn new(out: LineWriter) -> Self {
        StdinLink {
            out,
            lines: Mutex::new(Lines {
                buffer: Vec::new(),
                start: 0,
                dropping: None,
                ended: false,
            }),
            inbound: Mutex::new(Inbound::default()),
            changed: Condvar::new(),
        }
    }

    fn inbound(&self) -> MutexGuard<'_, Inbound> {
        self.inbound.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client's next request; `None` once stdin has closed and every request was taken.
    pub fn next_job(&self) -> Option<Value> {
        self.wait_for(None, |inbound| inbound.jobs.pop_front()).ok()
    }

    /// Says that a response to `id` will be awaited (before the request goes out, so an
    /// answer read by another thread is kept).
    pub fn expect(&self, id: &str) {
        self.inbound().awaited.insert(id.to_owned(), None);
    }

    /// Waits for the response to `id` ([`StdinLink::expect`]ed), at most `timeout`.
    pub fn response(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Result<Value, String>, Stopped> {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let answer = self.wait_for(deadline, |inbound| {
            inbound.awaited.get_mut(id).and_then(Option::take)
        });
        self.inbound().awaited.remove(id);
        answer
    }

    /// The client has gone: every wait for a response ends, now and later (requests already
    /// read are still taken).
    pub fn close(&self) {
        self.inbound().closed = true;
        self.changed.notify_all();
    }

    /// Waits until `take` finds what it wants, reading stdin while no other thread does.
    fn wait_for<T>(
        &self,
        deadline: Option<Instant>,
        mut take: impl FnMut(&mut Inbound) -> Option<T>,
    ) -> Result<T, Stopped> {
        let mut inbound = self.inbound();
        loop {
            if let Some(found) = take(&mut inbound) {
                return Ok(found);
            }
            if inbound.closed {
                return Err(Stopped::Closed);
            }
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Err(Stopped::TimedOut);
            }
            if inbound.reading {
                inbound.waiters += 1;
                inbound = match deadline {
                    Some(deadline) => {
                        self.changed
                            .wait_timeout(inbound, deadline - now)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                    None => self
                        .changed
                        .wait(inbound)
                        .unwrap_or_else(|e| e.into_inner()),
                };
                inbound.waiters -= 1;
                continue;
            }
            inbound.reading = true;
            drop(inbound);
            let read = self
                .lines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .next(deadline);
            inbound = self.inbound();
            inbound.reading = false;
            match read {
                Read1::Line(text) => self.sort(&mut inbound, &text),
                Read1::TooLong(bytes) => error_line(
                    &self.out,
                    &Value::Null,
                    &format!(
                        "line of {bytes} bytes is longer than pi-hooks' limit of {MAX_LINE_BYTES} bytes per line; send less text per line"
                    ),
                ),
                Read1::End => inbound.closed = true,
                Read1::TimedOut => {}
            }
            if inbound.waiters > 0 {
                self.changed.notify_all();
            }
        }
    }

    /// Puts one line from the client where its reader finds it: a `response` with its
    /// request, anything else in the request queue (the worker answers what it does not
    /// understand); a line that is not JSON, or a response nobody waits for, is answered with
    /// an error line.
    fn sort(&self, inbound: &mut Inbound, text: &str) {
        let line: Value = match serde_json::from_str(text) {
            Ok(line) => line,
            Err(error) => {
                let message = parse_error_message(text, &error);
                error_line(
                    &self.out,
                    &Value::Null,
                    &format!("malformed JSON line: {message}"),
                );
                return;
            }
        };
        if line.get("type").and_then(Value::as_str) != Some("response") {
            inbound.jobs.push_back(line);
            return;
        }
        let id = line.get("id").cloned().unwrap_or(Value::Null);
        let Some(key) = id.as_str() else {
            error_line(
                &self.out,
                &id,
                "a response needs a string \"id\" (the \"s<n>\" of the request it answers)",
            );
            return;
        };
        match inbound.awaited.get_mut(key) {
            Some(slot @ None) => {
                *slot = Some(match line.get("error") {
                    Some(error) if !error.is_null() => Err(match error.as_str() {
                        Some(text) => text.to_owned(),
                        None => error.to_string(),
                    }),
                    _ => Ok(line.get("result").cloned().unwrap_or(Value::Null)),
                });
            }
            _ => error_line(
                &self.out,
                &id,
                &format!(
                    "no request with id {key:?} is waiting (answered already, timed out, or never sent)"
                ),
            ),
        }
    }
}

/// Blocks until stdin's writers have all gone (`POLLHUP` on a pipe; a descriptor that never
/// reports it, a file say, blocks for good), without reading it.
pub fn wait_for_hangup() {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    loop {
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::empty(),
        )];
        match rustix::event::poll(&mut fds, None) {
            Ok(_)
                if fds[0].revents().intersects(
                    rustix::event::PollFlags::HUP
                        | rustix::event::PollFlags::ERR
                        | rustix::event::PollFlags::NVAL,
                ) =>
            {
                return;
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
    }
}
